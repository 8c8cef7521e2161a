import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { started, startHttpGateway, tempRuns, until } from "./support.js";

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
