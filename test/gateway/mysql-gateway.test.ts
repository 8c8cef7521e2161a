import { afterAll, describe, expect, it } from "vitest";
import { startCli } from "../support/cli.js";
import { lineReader } from "../support/lines.js";
import { privateMariaDb } from "../support/mariadb.js";
import { effectServer, started, tempRuns, until } from "./support.js";

// `idemkey gateway http --store mysql://...` in front of Python's http.server (test/fixtures/effect-server.py), which
// appends one line to its own file per request it processes: the effects are counted there, never through idemkey.
// The records live on a private MariaDB of this file's own.
const server = await privateMariaDb();
const runs = tempRuns("idemkey-mysql-gateway-");

afterAll(async () => {
  await server.stop();
});

describe("idemkey gateway http on a mysql:// store", () => {
  it("a lost answer is replayed from the MySQL record: one effect per key", async () => {
    const upstream = await effectServer(runs.next());
    const child = started(
      startCli([
        "gateway",
        "http",
        "--store",
        `${server.url}?table=gateway`,
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        upstream.url,
        "--scope-header",
        "x-api-key",
      ]),
    );
    let err = "";
    child.stderr!.on("data", (d) => (err += d));
    const line = await lineReader(child.stdout!)();
    const url = /^idemkey gateway \w+: (\S+) -> /.exec(line ?? "")?.[1];
    expect(url, err).toBeDefined();
    const post = (init: RequestInit = {}) =>
      fetch(`${url}/slow?ms=300`, {
        method: "POST",
        headers: { "idempotency-key": "k1", "content-type": "application/json", "x-api-key": "alice" },
        body: '{"n":1}',
        ...init,
      });
    const abort = new AbortController();
    const lost = post({ signal: abort.signal });
    await until(() => upstream.effects().length === 1);
    abort.abort();
    await expect(lost).rejects.toThrow();
    let replay = await post();
    while (replay.status === 409 && (await replay.clone().text()).includes("key-in-flight")) {
      await new Promise((r) => setTimeout(r, 100));
      replay = await post();
    }
    expect(replay.status).toBe(201);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(upstream.effects()).toEqual(['{"n":1}']);
    expect(err).toBe("");
  }, 60_000);
});
