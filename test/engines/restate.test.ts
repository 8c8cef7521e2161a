import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { idempotencyKey } from "../../src/index.js";
import { postgresService } from "../support/services.js";
import { node22 } from "./node22.js";
import { type Owner, startOwner } from "./owner.js";
import { type RestateServer, startRestateServer } from "./restate-server.js";

const service = await postgresService();
const node = node22("idemkey/restate tests (the Restate SDK uses Promise.withResolvers)");
const skip = service.skip ?? node.skip;
const dir = mkdtempSync(join(tmpdir(), "idemkey-restate-test-"));
const endpointScript = fileURLToPath(new URL("./fixtures/restate-endpoint.ts", import.meta.url));
let server: RestateServer;
let owner: Owner;
let main: Endpoint | undefined;
const attemptsFile = join(dir, "attempts.txt");
const ledger = `idemkey_restate_ledger_${randomBytes(4).toString("hex")}`;
/** What the owner does after the Nth effect: lose the reply, or kill the service process first and then lose it. */
const afterEffect = new Map<number, () => "drop">();

interface Endpoint {
  child: ChildProcess;
  port: number;
}

/** Starts the service endpoint in a Node.js 22 process; `port` 0 for any free one. */
async function endpointProcess(port: number): Promise<Endpoint> {
  const child = spawn(node.path as string, ["--import", "tsx", endpointScript], {
    env: {
      ...process.env,
      IDEMKEY_OWNER_URL: owner.url,
      IDEMKEY_PG_URL: service.url,
      IDEMKEY_LEDGER_TABLE: ledger,
      IDEMKEY_ATTEMPTS_FILE: attemptsFile,
      // The SDK logs each failed block at WARN; these failures are the ones the tests provoke.
      RESTATE_LOGGING: "ERROR",
      PORT: String(port),
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  for await (const line of lines) {
    const match = /^listening (\d+)$/.exec(line);
    if (match) return { child, port: Number(match[1]) };
  }
  throw new Error("the endpoint process exited before it listened");
}

async function kill(endpoint: Endpoint | undefined) {
  const child = endpoint?.child;
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const gone = once(child, "exit");
  child.kill("SIGKILL");
  await gone;
}

beforeAll(async () => {
  if (skip) return;
  owner = await startOwner({
    effectsFile: join(dir, "effects.jsonl"),
    afterEffect: (n) => afterEffect.get(n)?.(),
  });
  server = await startRestateServer();
  main = await endpointProcess(0);
  await server.register(`http://127.0.0.1:${main.port}`);
}, 120_000);

afterAll(async () => {
  await kill(main);
  await server?.stop();
  await owner?.close();
  if (!skip) {
    const admin = new pg.Client({ connectionString: service.url });
    await admin.connect();
    await admin.query(`DROP TABLE IF EXISTS "${ledger}"`);
    await admin.query("DELETE FROM idemkey_meta WHERE name = $1", [ledger]).catch(() => {});
    await admin.end();
  }
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

async function invoke(ingress: string, handler: string, amount: number, idempotencyKey?: string) {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (idempotencyKey !== undefined) headers["idempotency-key"] = idempotencyKey;
  const res = await fetch(`${ingress}/payments/${handler}`, {
    method: "POST",
    headers,
    body: JSON.stringify(amount),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : undefined };
}

/** Invokes `handler` with the owner losing the reply of the next effect. */
async function withLostReply(handler: string, amount: number) {
  const before = owner.effects().length;
  afterEffect.clear();
  afterEffect.set(before + 1, () => "drop");
  const answer = await invoke(server.ingress, handler, amount);
  return { ...answer, effects: owner.effects().slice(before) };
}

(skip ? describe.skip : describe)("idemkey/restate against a real restate-server", () => {
  it("a ctx.run block that took effect and lost its reply is retried by Restate under the same key: one effect", async () => {
    const { status, body, effects } = await withLostReply("withIdemkey", 800);
    expect(status).toBe(200);
    const key = idempotencyKey(body?.invocationId as string, "charge", { amount: 800 }, { step: "charge" });
    expect(effects).toEqual([{ key, body: { amount: 800 } }]);
    expect(owner.requests.filter((r) => r.key === key)).toHaveLength(2); // Restate did retry; the owner replayed
    expect(body?.receipt).toEqual({ id: expect.any(String), amount: 800 });
  });

  it("(without idemkey) a key minted inside the block is new on Restate's retry: two effects", async () => {
    const { status, effects } = await withLostReply("bare", 801);
    expect(status).toBe(200);
    expect(effects).toHaveLength(2);
    expect(new Set(effects.map((e) => e.key)).size).toBe(2);
  });

  it("two blocks with one name in one handler get two keys, name and name#2", async () => {
    const { status, body, effects } = await withLostReply("twice", 802);
    expect(status).toBe(200);
    const id = body?.invocationId as string;
    expect(effects.map((e) => e.key)).toEqual(
      ["charge", "charge#2"].map((step) => idempotencyKey(id, "charge", { amount: 802 }, { step })),
    );
  });

  it("an unguarded block that may have taken effect fails terminally with OutcomeUnknownError: no retry", async () => {
    const { status, body, effects } = await withLostReply("unguarded", 803);
    expect(effects).toHaveLength(1);
    expect(status).toBeGreaterThanOrEqual(400);
    expect(JSON.stringify(body)).toContain("is unknown");
    expect(owner.requests.filter((r) => r.path === "/unguarded" && r.key === null).length).toBeGreaterThan(0);
  });

  it("(without idemkey) the same unguarded block is retried by Restate: two effects", async () => {
    const { status, effects } = await withLostReply("unguardedBare", 804);
    expect(status).toBe(200);
    expect(effects).toHaveLength(2);
  });

  it("two invocations with the same arguments are two runs: two invocation ids, two effects", async () => {
    const before = owner.effects().length;
    afterEffect.clear();
    const first = await invoke(server.ingress, "withIdemkey", 806);
    const second = await invoke(server.ingress, "withIdemkey", 806);
    expect(first.body?.invocationId).not.toBe(second.body?.invocationId);
    expect(owner.effects().slice(before)).toHaveLength(2);
  });

  it("an idempotency-keyed request sent twice is one invocation: one effect", async () => {
    const before = owner.effects().length;
    afterEffect.clear();
    const key = `order-${randomBytes(4).toString("hex")}`;
    const first = await invoke(server.ingress, "withIdemkey", 807, key);
    const second = await invoke(server.ingress, "withIdemkey", 807, key);
    expect(second.body?.invocationId).toBe(first.body?.invocationId);
    expect(owner.effects().slice(before)).toHaveLength(1);
  });

  it("a keyed tool whose result is not JSON: one attempt, the block fails with a TerminalError naming the error", async () => {
    const amount = 805;
    const attempts = () =>
      existsSync(attemptsFile)
        ? readFileSync(attemptsFile, "utf8")
            .split("\n")
            .filter((line) => line === String(amount)).length
        : 0;
    const before = owner.effects().length;
    // Bounded by attempts, not time: a retryable failure would have Restate back off and retry without end.
    let stop = false;
    const retried = (async () => {
      while (!stop && attempts() < 3) await new Promise((resolve) => setTimeout(resolve, 50));
      return "retried" as const;
    })();
    const answer = await Promise.race([invoke(server.ingress, "bigint", amount), retried]);
    stop = true;
    expect(answer).not.toBe("retried");
    expect(attempts()).toBe(1);
    expect(owner.effects().slice(before)).toHaveLength(1);
    const { status, body } = answer as Awaited<ReturnType<typeof invoke>>;
    expect(status).toBeGreaterThanOrEqual(400);
    expect(JSON.stringify(body)).toContain("is not a JSON value");
  });

  describe("the service process killed with SIGKILL right after the effect, then started again", () => {
    let kills = 0;
    async function crashAndRestart(handler: string, amount: number) {
      const first = await endpointProcess(0);
      let second: Promise<Endpoint> | undefined;
      await server.register(`http://127.0.0.1:${first.port}`);
      const before = owner.effects().length;
      afterEffect.clear();
      afterEffect.set(before + 1, () => {
        kills += 1;
        first.child.kill("SIGKILL");
        // Restate retries against the same URI: a new process on the same port picks the invocation up.
        second = once(first.child, "exit").then(() => endpointProcess(first.port));
        return "drop";
      });
      try {
        const answer = await invoke(server.ingress, handler, amount);
        return { ...answer, effects: owner.effects().slice(before) };
      } finally {
        await kill(first);
        await kill(await second?.catch(() => undefined));
      }
    }

    it("with idemkey: the restarted process runs the block again under the same key: one effect", async () => {
      const { status, body, effects } = await crashAndRestart("withIdemkey", 810);
      expect(kills).toBe(1);
      expect(status).toBe(200);
      const key = idempotencyKey(body?.invocationId as string, "charge", { amount: 810 }, { step: "charge" });
      expect(effects).toEqual([{ key, body: { amount: 810 } }]);
    });

    it("(without idemkey) the restarted process charges again: two effects", async () => {
      const { status, effects } = await crashAndRestart("bare", 811);
      expect(kills).toBe(2);
      expect(status).toBe(200);
      expect(effects).toHaveLength(2);
    });
  });
});
