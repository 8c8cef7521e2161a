import { execFileSync } from "node:child_process";
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Hono } from "hono";
import { afterAll, describe, expect, it } from "vitest";
import { idempotency } from "../../src/hono/index.js";
import { requestFingerprint } from "../../src/owner/fingerprint.js";
import { type Backend, sharedBackends } from "./backends.js";
import { PYTHON, requirePython, skipWithoutPython } from "./support.js";

// The owner's half in both languages on one store (a SQLite file, a PostgreSQL table, a Redis prefix): a request served by the Python ASGI middleware
// (python/tests/asgi_owner.py, Starlette) replays from the TypeScript middleware (Hono) and the reverse. Each
// handler appends its effect to one owner file, which counts them whatever either middleware says.

const noPython = skipWithoutPython("test/python/asgi-cross.test.ts");
const dir = mkdtempSync(join(tmpdir(), "idemkey-asgi-"));

// Shared servers: a table and a prefix of this run's own, dropped and deleted afterwards (never a flush).
const { backends: BACKENDS, cleanup } = await sharedBackends(dir);
afterAll(async () => {
  await cleanup();
  rmSync(dir, { recursive: true, force: true });
});

type PyRequest = { path: string; key: string; account: string; body: string };
type PyAnswer = { status: number; body: unknown; replayed: string | null; location: string | null };

function python(config: object): string[] {
  requirePython();
  const out = execFileSync(PYTHON, ["python/tests/asgi_owner.py", JSON.stringify(config)], {
    encoding: "utf8",
    env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" },
  });
  return out.trim().split("\n");
}

function pythonServes(store: string, effects: string, requests: PyRequest[]): PyAnswer[] {
  return python({ store, effects, requests }).map((line) => JSON.parse(line) as PyAnswer);
}

async function typescriptOwner(backend: Backend, spec: string, effects: string) {
  const store = await backend.open(spec);
  const app = new Hono();
  app.use("/charges", idempotency({ store, scope: (c) => c.req.header("x-account") ?? "" }));
  app.post("/charges", async (c) => {
    const body = (await c.req.json()) as { amount: number };
    appendFileSync(effects, `${JSON.stringify({ by: "ts", amount: body.amount })}\n`);
    const count = effectLines(effects).length;
    return c.json({ charge: count, by: "ts" }, 201, { location: `/c/${count}` });
  });
  const send = async (key: string, account: string, body: string) => {
    const response = await app.request("/charges", {
      method: "POST",
      body,
      headers: { "idempotency-key": key, "x-account": account, "content-type": "application/json" },
    });
    return {
      status: response.status,
      body: (await response.json()) as unknown,
      replayed: response.headers.get("idempotent-replayed"),
      location: response.headers.get("location"),
    };
  };
  return { send, close: () => store.close() };
}

function effectLines(effects: string): { by: string; amount: number }[] {
  let text = "";
  try {
    text = readFileSync(effects, "utf8");
  } catch {
    return [];
  }
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as { by: string; amount: number });
}

for (const backend of BACKENDS) {
  describe.skipIf(noPython || backend.skip !== undefined)(
    `the ASGI middleware and the TypeScript middleware on ${backend.name}`,
    () => {
      it("a request served in Python replays from TypeScript and the reverse, each effect once at the owner", async () => {
        const db = backend.spec("replay");
        const effects = join(dir, `${backend.name}-replay.jsonl`.replace(/ /g, "-"));
        // The same request in two spellings: one JSON value, so one request in both languages.
        const body = '{"amount": 500, "currency": "eur"}';
        const respelled = '{ "currency":"eur", "amount":5.00e2 }';

        const [servedByPython] = pythonServes(db, effects, [
          { path: "/charges", key: "k1", account: "a", body },
        ]);
        expect(servedByPython).toEqual({
          status: 201,
          body: { charge: 1, by: "python" },
          replayed: null,
          location: "/c/1",
        });

        const ts = await typescriptOwner(backend, db, effects);
        try {
          expect(await ts.send("k1", "a", respelled)).toEqual({
            status: 201,
            body: { charge: 1, by: "python" },
            replayed: "true",
            location: "/c/1",
          });
          // Another body under the key is another request, in either language; another caller's key is its own.
          expect((await ts.send("k1", "a", '{"amount": 501}')).status).toBe(422);
          const servedByTs = await ts.send("k2", "a", body);
          expect(servedByTs).toEqual({
            status: 201,
            body: { charge: 2, by: "ts" },
            replayed: null,
            location: "/c/2",
          });
        } finally {
          await ts.close();
        }

        const answers = pythonServes(db, effects, [
          { path: "/charges", key: "k2", account: "a", body: respelled },
          { path: "/charges", key: "k1", account: "a", body },
          { path: "/charges", key: "k2", account: "a", body: '{"amount": 7}' },
          { path: "/charges", key: "k2", account: "b", body },
        ]);
        expect(answers).toEqual([
          { status: 201, body: { charge: 2, by: "ts" }, replayed: "true", location: "/c/2" },
          { status: 201, body: { charge: 1, by: "python" }, replayed: "true", location: "/c/1" },
          expect.objectContaining({ status: 422, replayed: null }),
          { status: 201, body: { charge: 3, by: "python" }, replayed: null, location: "/c/3" },
        ]);
        expect(effectLines(effects)).toEqual([
          { by: "python", amount: 500 },
          { by: "ts", amount: 500 },
          { by: "python", amount: 500 },
        ]);
      }, 60_000);

      it("a request running in TypeScript is in flight for Python (409 key-in-flight), and its response then replays there", async () => {
        const db = backend.spec("inflight");
        const effects = join(dir, `${backend.name}-in-flight.jsonl`.replace(/ /g, "-"));
        const store = await backend.open(db);
        let entered: () => void = () => {};
        const inHandler = new Promise<void>((resolve) => {
          entered = resolve;
        });
        let open: () => void = () => {};
        const gate = new Promise<void>((resolve) => {
          open = resolve;
        });
        const app = new Hono();
        app.use("/charges", idempotency({ store, scope: "single-tenant" }));
        app.post("/charges", async (c) => {
          entered();
          await gate;
          appendFileSync(effects, `${JSON.stringify({ by: "ts", amount: 500 })}\n`);
          return c.json({ charge: 1, by: "ts" }, 201);
        });
        const body = '{"amount": 500}';
        try {
          const running = app.request("/charges", {
            method: "POST",
            body,
            headers: { "idempotency-key": "k", "content-type": "application/json" },
          });
          await inHandler;
          const [busy] = pythonServes(db, effects, [{ path: "/charges", key: "k", account: "", body }]);
          expect(busy).toEqual({
            status: 409,
            body: expect.objectContaining({
              type: "https://idemkey.dev/problems/key-in-flight",
              status: 409,
            }),
            replayed: null,
            location: null,
          });
          open();
          expect((await running).status).toBe(201);
          const [replayed] = pythonServes(db, effects, [{ path: "/charges", key: "k", account: "", body }]);
          expect(replayed).toEqual({
            status: 201,
            body: { charge: 1, by: "ts" },
            replayed: "true",
            location: null,
          });
          expect(effectLines(effects)).toEqual([{ by: "ts", amount: 500 }]);
        } finally {
          open();
          await store.close();
        }
      }, 60_000);
    },
  );
}

describe.skipIf(noPython)("the ASGI middleware's request fingerprints", () => {
  it("gives every request the TypeScript fingerprint, or the same refusal at the same place", () => {
    const cases: [string, string, string | undefined, string][] = [
      [
        "post",
        "/a?b=1",
        "application/json",
        '{"b": [1, 2.50, -0, 1e21, 9007199254740993], "a": "€\\u0001\\n"}',
      ],
      ["POST", "/a", "application/json", '{"\\ud83d\\ude00": null, "z": 0.000120e-3, "y": -12300}'],
      ["POST", "/x", "application/vnd.api+json; charset=utf-8", '\ufeff{"z":{"y":[true,false,1E400]}}'],
      ["PATCH", "/x", "text/plain", "hello"],
      ["POST", "/x", "application/json", ""],
      ["POST", "/x", "application/json", '{"a":1,"b":{"c":[0,{"d":1,"d":2}]}}'],
      ["POST", "/x", "application/json", '{"a":"\\udc00"}'],
      ["POST", "/x", "application/json", '{"a":NaN}'],
      ["POST", "/x", "application/json", "[1,]"],
      ["POST", "/x", "Application/JSON ; q=1", '"\\u00e9\\u2028"'],
    ];
    const encoder = new TextEncoder();
    const ts = cases.map(([method, target, type, body]) =>
      JSON.stringify(requestFingerprint(method, target, type, { bytes: encoder.encode(body) })),
    );
    expect(python({ fingerprints: cases })).toEqual(ts);
  }, 60_000);
});
