import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { freePorts } from "../support/free-port.js";
import { started, startGateway, startHttpGateway, tempRuns, until } from "./support.js";

// `idemkey gateway http` from the CLI in front of a plain Python http.server (test/fixtures/effect-server.py) that
// appends one line to its own file per request it processes: the effects are counted there, never through idemkey.
const runs = tempRuns("idemkey-http-gateway-");

const setup = () => startHttpGateway(runs.next(), ["--scope-header", "x-api-key"]);

const post = (url: string, key: string, body: string, init: RequestInit = {}) =>
  fetch(url, {
    method: "POST",
    headers: { "idempotency-key": key, "content-type": "application/json", "x-api-key": "alice" },
    body,
    ...init,
  });

/** Retries until the answer is no longer "in flight", as a client honouring the 409 would. */
async function settled(send: () => Promise<Response>): Promise<Response> {
  for (;;) {
    const response = await send();
    if (response.status !== 409 || !(await response.clone().text()).includes("key-in-flight"))
      return response;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("idemkey gateway http, in front of Python's http.server", () => {
  it("a lost answer is replayed from the record: one effect per key, per caller", async () => {
    const { url, effects } = await setup();
    const abort = new AbortController();
    const lost = post(`${url}/slow?ms=300`, "k1", '{"n":1}', { signal: abort.signal });
    await until(() => effects().length === 1);
    abort.abort();
    await expect(lost).rejects.toThrow();
    const replay = await settled(() => post(`${url}/slow?ms=300`, "k1", '{"n":1}'));
    expect(replay.status).toBe(201);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(await replay.json()).toEqual({ effects: 1 });
    expect(effects()).toEqual(['{"n":1}']);

    const reused = await post(`${url}/slow`, "k1", '{"n":2}');
    expect(reused.status).toBe(422);
    expect(reused.headers.get("content-type")).toContain("application/problem+json");
    // Another caller's same key is its own.
    const bob = await post(`${url}/slow`, "k1", '{"n":1}', {
      headers: { "idempotency-key": "k1", "content-type": "application/json", "x-api-key": "bob" },
    });
    expect(bob.status).toBe(201);
    expect(effects()).toHaveLength(2);
  });

  it("a client killed mid-request and retried gets the recorded answer", async () => {
    const { url, effects } = await setup();
    const script = `fetch(${JSON.stringify(`${url}/slow?ms=500`)}, { method: "POST", headers: { "idempotency-key": "k2", "x-api-key": "alice", "content-type": "application/json" }, body: '{"n":3}' })`;
    const client = started(spawn(process.execPath, ["-e", script], { stdio: "ignore" }));
    await until(() => effects().length === 1);
    client.kill("SIGKILL");
    const retry = await settled(() => post(`${url}/slow?ms=500`, "k2", '{"n":3}'));
    expect(retry.status).toBe(201);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(effects()).toEqual(['{"n":3}']);
  });

  it("an upstream that dies mid-request leaves the outcome unknown, and it is not sent again", async () => {
    const { url, effects } = await setup();
    const first = await post(`${url}/die`, "k3", '{"n":4}');
    expect(first.status).toBe(502);
    expect(await first.json()).toMatchObject({ type: "https://idemkey.dev/problems/outcome-unknown" });
    expect(effects()).toEqual(['{"n":4}']);
    const retry = await post(`${url}/die`, "k3", '{"n":4}');
    expect(retry.status).toBe(409);
    expect(await retry.json()).toMatchObject({ type: "https://idemkey.dev/problems/outcome-unknown" });
    expect(effects()).toEqual(['{"n":4}']);
  });
});

/** One request of `method` with `body`, keyed by `key` unless it is `undefined`, as caller alice. */
const send = (url: string, method: string, key: string | undefined, body: string) =>
  fetch(`${url}/effect`, {
    method,
    headers: {
      "content-type": "application/json",
      "x-api-key": "alice",
      ...(key === undefined ? {} : { "idempotency-key": key }),
    },
    body,
  });

const UNSAFE = ["POST", "PATCH", "PUT", "DELETE"] as const;

describe("idemkey gateway http: in flight, any status, a refused connection, a bad key", () => {
  it("a retry while the first request runs is answered 409 key-in-flight with Retry-After, not forwarded", async () => {
    const { url, effects } = await setup();
    const abort = new AbortController();
    // The upstream holds the first request well past the test; the gateway is killed after it.
    const first = post(`${url}/slow?ms=120000`, "k1", '{"n":1}', { signal: abort.signal });
    first.catch(() => {});
    await until(() => effects().length === 1);
    const retry = await post(`${url}/slow?ms=120000`, "k1", '{"n":1}');
    expect(retry.status).toBe(409);
    expect(retry.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(await retry.json()).toMatchObject({ type: "https://idemkey.dev/problems/key-in-flight" });
    expect(effects()).toHaveLength(1);
    abort.abort();
  });

  it("whatever status the upstream answers is recorded and replayed", async () => {
    const { url, effects } = await setup();
    for (const [key, status] of [
      ["k4", 404],
      ["k5", 500],
    ] as const) {
      const first = await post(`${url}/effect?status=${status}`, key, `{"status":${status}}`);
      expect(first.status).toBe(status);
      const again = await post(`${url}/effect?status=${status}`, key, `{"status":${status}}`);
      expect(again.status).toBe(status);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect(await again.text()).toBe(await first.text());
    }
    expect(effects()).toEqual(['{"status":404}', '{"status":500}']);
  });

  it("a refused connection sent nothing: 502 about:blank, and the key is released for the retry", async () => {
    const run = runs.next();
    const [port] = await freePorts(1);
    const { url } = await startGateway("http", join(run, "gateway.db"), [
      "--upstream",
      `http://127.0.0.1:${port}`,
    ]);
    const refused = await post(`${url}/effect`, "k6", '{"n":6}');
    expect(refused.status).toBe(502);
    expect(await refused.json()).toMatchObject({ type: "about:blank", title: "Upstream unreachable" });
    // The upstream comes up on that port, and counts what reaches it.
    const received: string[] = [];
    const upstream = createServer((req, res) => {
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", () => {
        received.push(body);
        res.writeHead(201, { "content-type": "application/json" }).end('{"ok":true}');
      });
    });
    await new Promise<void>((resolve) => upstream.listen(port, "127.0.0.1", resolve));
    try {
      const retry = await post(`${url}/effect`, "k6", '{"n":6}');
      expect(retry.status).toBe(201);
      expect(retry.headers.get("idempotent-replayed")).toBeNull();
      expect((await post(`${url}/effect`, "k6", '{"n":6}')).headers.get("idempotent-replayed")).toBe("true");
      expect(received).toEqual(['{"n":6}']);
    } finally {
      upstream.closeAllConnections();
      await new Promise((resolve) => upstream.close(resolve));
    }
  });

  it("a malformed key is answered 400 key-invalid and not forwarded", async () => {
    const { url, effects } = await setup();
    for (const key of ["x".repeat(256), "a,b", '"open']) {
      const bad = await post(`${url}/effect`, key, '{"n":7}');
      expect(bad.status).toBe(400);
      expect(await bad.json()).toMatchObject({ type: "https://idemkey.dev/problems/key-invalid" });
    }
    expect(effects()).toEqual([]);
  });
});

describe("idemkey gateway http: the methods it covers, and whether they need a key", () => {
  it("by default POST, PATCH, PUT and DELETE with a key are forwarded once, and replayed", async () => {
    const { url, effects } = await setup();
    for (const method of UNSAFE) {
      const body = JSON.stringify({ method, keyed: true });
      const first = await send(url, method, `k-${method}`, body);
      expect(first.status).toBe(201);
      expect(first.headers.get("idempotent-replayed")).toBeNull();
      const again = await send(url, method, `k-${method}`, body);
      expect(again.status).toBe(201);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect(await again.text()).toBe(await first.text());
    }
    expect(effects()).toHaveLength(4);
  });

  it("by default a request without a key passes through: each send reaches the API, as before the gateway", async () => {
    const { url, effects } = await setup();
    for (const method of UNSAFE) {
      const body = JSON.stringify({ method, keyed: false });
      for (let i = 0; i < 2; i++) {
        const answer = await send(url, method, undefined, body);
        expect(answer.status).toBe(201);
        expect(answer.headers.get("idempotent-replayed")).toBeNull();
      }
    }
    expect(effects()).toHaveLength(8);
  });

  it("--require-key: a covered method without a key is refused 400 key-missing and never forwarded", async () => {
    const { url, effects } = await startHttpGateway(runs.next(), [
      "--scope-header",
      "x-api-key",
      "--require-key",
    ]);
    for (const method of UNSAFE) {
      const refused = await send(url, method, undefined, JSON.stringify({ method }));
      expect(refused.status).toBe(400);
      expect(refused.headers.get("content-type")).toContain("application/problem+json");
      expect(await refused.json()).toMatchObject({ type: "https://idemkey.dev/problems/key-missing" });
    }
    expect(effects()).toEqual([]);
    expect((await send(url, "PUT", "k1", '{"n":1}')).status).toBe(201);
    expect((await send(url, "PUT", "k1", '{"n":1}')).headers.get("idempotent-replayed")).toBe("true");
    expect(effects()).toEqual(['{"n":1}']);
  });

  it("--methods: a method it does not name passes through, keyed or not, even with --require-key", async () => {
    const { url, effects } = await startHttpGateway(runs.next(), [
      "--scope-header",
      "x-api-key",
      "--methods",
      "POST,patch",
      "--require-key",
    ]);
    for (const method of ["PUT", "DELETE"]) {
      for (const key of ["k1", "k1", undefined]) {
        const answer = await send(url, method, key, JSON.stringify({ method }));
        expect(answer.status).toBe(201);
        expect(answer.headers.get("idempotent-replayed")).toBeNull();
      }
    }
    expect(effects()).toHaveLength(6);
    // The methods it names are covered (whatever their case on the command line), and need a key.
    expect((await send(url, "PATCH", "k2", '{"n":2}')).status).toBe(201);
    expect((await send(url, "PATCH", "k2", '{"n":2}')).headers.get("idempotent-replayed")).toBe("true");
    expect((await send(url, "POST", undefined, '{"n":3}')).status).toBe(400);
    expect(effects()).toHaveLength(7);
  });
});

describe("idemkey gateway http: a bad --methods prints one line and exits 2", () => {
  it.each([["PO ST"], [""], ["POST,,PUT"], ["POST,"], ["GET(x)"]])("--methods %j", async (methods) => {
    const { code, stdout, stderr } = await runCli([
      "gateway",
      "http",
      "--store",
      "sqlite:x.db",
      "--upstream",
      "http://127.0.0.1:1",
      "--listen",
      "0",
      "--methods",
      methods,
    ]);
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr).toMatch(/^idemkey: --methods must be [^\n]+\n$/);
  });
});

describe("httpGateway: methods and required checked at once, with a TypeError naming the option", () => {
  it.each([
    [{ methods: ["PO ST"] }, /options\.methods\[0\] must be an HTTP token/],
    [{ methods: [] }, /options\.methods must be a non-empty array/],
    [{ methods: "POST" }, /options\.methods must be a non-empty array/],
    [{ required: "yes" }, /options\.required must be a boolean/],
  ])("%j", async (extra, message) => {
    const { httpGateway } = await import("../../src/gateway/index.js");
    const { memoryStore } = await import("../../src/index.js");
    await expect(
      httpGateway({ upstream: "http://127.0.0.1:1", store: memoryStore(), ...(extra as object) }),
    ).rejects.toThrow(TypeError);
    await expect(
      httpGateway({ upstream: "http://127.0.0.1:1", store: memoryStore(), ...(extra as object) }),
    ).rejects.toThrow(message);
  });
});
