import { request } from "node:https";
import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { type Holder, LOOKALIKES, testPki } from "./pki.js";
import { scopesIn, startHttpGateway, tempRuns } from "./support.js";

// `idemkey gateway http --tls-* --scope-mtls` in front of Python's http.server (test/fixtures/effect-server.py,
// which counts its effects in its own file), with the certificates of test/gateway/pki.ts: a CA, the gateway's
// certificate, two clients the CA signed (alice and bob) and one it did not (mallory).
const runs = tempRuns("idemkey-gateway-mtls-");
const pki = testPki(runs.dir);

const setup = (scope: "subject" | "fingerprint") =>
  startHttpGateway(runs.next(), [...pki.flags(), "--scope-mtls", scope]);

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A POST over HTTPS that trusts the test CA, presenting `client`'s certificate (or none). */
function post(url: string, client: Holder | undefined, key: string, body: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/effect`,
      {
        method: "POST",
        ca: pki.read("ca", "crt"),
        ...(client === undefined
          ? {}
          : {
              cert: pki.read(client, "crt"),
              key: pki.read(client, "key"),
            }),
        headers: { "idempotency-key": key, "content-type": "application/json" },
        agent: false,
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d) => (text += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

describe("idemkey gateway http with mTLS: the client certificate is the scope", () => {
  it("two clients with different certificates do not share keys; one retries into its own replay", async () => {
    const { url, effects, db } = await setup("subject");
    const first = await post(url, "alice", "k1", '{"n":1}');
    expect(first.status).toBe(201);
    const replay = await post(url, "alice", "k1", '{"n":1}');
    expect(replay.status).toBe(201);
    expect(replay.headers["idempotent-replayed"]).toBe("true");
    expect(effects()).toEqual(['{"n":1}']);
    // Bob's k1 is his own: it runs, and is not alice's replay.
    const bob = await post(url, "bob", "k1", '{"n":1}');
    expect(bob.status).toBe(201);
    expect(bob.headers["idempotent-replayed"]).toBeUndefined();
    expect(effects()).toHaveLength(2);
    // The inspector names each key's caller by its certificate.
    expect(await scopesIn(db)).toEqual(["O=acme,CN=alice", "O=acme,CN=bob"]);
  });

  it("a client without a certificate, or with one the CA did not sign, is refused with problem+json", async () => {
    const { url, effects } = await setup("fingerprint");
    const none = await post(url, undefined, "k2", '{"n":2}');
    expect(none.status).toBe(401);
    expect(none.headers["content-type"]).toContain("application/problem+json");
    expect(JSON.parse(none.body)).toMatchObject({
      type: "https://idemkey.dev/problems/client-certificate-required",
      status: 401,
    });
    // Mallory's certificate says CN=alice but no one the gateway trusts signed it.
    const forged = await post(url, "mallory", "k2", '{"n":2}');
    expect(forged.status).toBe(401);
    expect(JSON.parse(forged.body).detail).toMatch(/not accepted/);
    expect(effects()).toEqual([]);
    // Fingerprints: alice's key is hers alone.
    expect((await post(url, "alice", "k2", '{"n":2}')).status).toBe(201);
    expect((await post(url, "bob", "k2", '{"n":2}')).headers["idempotent-replayed"]).toBeUndefined();
    expect(effects()).toHaveLength(2);
  });
});

describe("idemkey gateway http --scope-mtls subject: the scope is the subject's DER, read exactly", () => {
  it("subjects Node's parsed subject reads alike (a type repeated apart or together, one RDN or two) are four scopes", async () => {
    const { url, effects, db } = await setup("subject");
    const holders = Object.keys(LOOKALIKES) as (keyof typeof LOOKALIKES)[];
    for (const [i, holder] of holders.entries()) {
      // The same key and body from each: each one's own call, not a replay of the one before.
      const answer = await post(url, holder, "k1", '{"n":1}');
      expect(answer.status).toBe(201);
      expect(answer.headers["idempotent-replayed"]).toBeUndefined();
      expect(JSON.parse(answer.body)).toEqual({ effects: i + 1 });
    }
    expect(effects()).toHaveLength(4);
    expect(await scopesIn(db)).toEqual(Object.values(LOOKALIKES).sort());
  });

  it("a renewed certificate (same subject, new key) keeps its keys by subject, and starts afresh by fingerprint", async () => {
    const bySubject = await setup("subject");
    expect((await post(bySubject.url, "alice", "k1", '{"n":1}')).status).toBe(201);
    const renewed = await post(bySubject.url, "aliceRenewed", "k1", '{"n":1}');
    expect(renewed.status).toBe(201);
    expect(renewed.headers["idempotent-replayed"]).toBe("true");
    expect(bySubject.effects()).toHaveLength(1);

    const byFingerprint = await setup("fingerprint");
    expect((await post(byFingerprint.url, "alice", "k1", '{"n":1}')).status).toBe(201);
    const fresh = await post(byFingerprint.url, "aliceRenewed", "k1", '{"n":1}');
    expect(fresh.status).toBe(201);
    expect(fresh.headers["idempotent-replayed"]).toBeUndefined();
    expect(byFingerprint.effects()).toHaveLength(2);
  });
});

describe("idemkey gateway http: bad TLS flags print one line and exit 2", () => {
  const base = [
    "gateway",
    "http",
    "--store",
    "sqlite:x.db",
    "--upstream",
    "http://127.0.0.1:1",
    "--listen",
    "0",
  ];
  const cases: [string, string[], RegExp][] = [
    ["a certificate without its key", ["--tls-cert", "a.crt"], /--tls-cert needs --tls-key/],
    ["a CA without the gateway's certificate", ["--tls-ca", "ca.crt"], /--tls-ca needs/],
    [
      "--scope-mtls without a CA",
      [...pki.flags({ ca: false }), "--scope-mtls", "subject"],
      /--scope-mtls needs --tls-ca/,
    ],
    ["an unknown --scope-mtls", ["--scope-mtls", "email"], /subject or fingerprint/],
    [
      "an unreadable certificate",
      ["--tls-cert", "/nonexistent.crt", "--tls-key", "/nonexistent.key"],
      /cannot read/,
    ],
  ];
  it.each(cases)("%s", async (_, args, message) => {
    const { code, stdout, stderr } = await runCli([...base, ...args]);
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr).toMatch(/^idemkey: [^\n]+\n$/);
    expect(stderr).toMatch(message);
  });
});

describe("httpGateway and mcpHttpGateway: options checked at once, with a TypeError naming the option", () => {
  // Both gateways listen through src/gateway/tls.ts, and say the same of the same TLS options.
  const tlsCases: [object, RegExp][] = [
    [{ scopeMtls: "subject" }, /options.scopeMtls needs options.tls.ca/],
    [{ scopeMtls: "email", tls: { cert: "c", key: "k", ca: "a" } }, /options.scopeMtls must be/],
    [{ scopeMtls: "subject", scopeHeader: "x-api-key", tls: { cert: "c", key: "k", ca: "a" } }, /two scopes/],
    [{ tls: { cert: "c" } }, /options.tls must have a cert and a key/],
  ];
  it.each(tlsCases)("httpGateway %j", async (extra, message) => {
    const { httpGateway } = await import("../../src/gateway/index.js");
    const { memoryStore } = await import("../../src/index.js");
    await expect(
      httpGateway({ upstream: "http://127.0.0.1:1", store: memoryStore(), ...(extra as object) }),
    ).rejects.toThrow(message);
  });

  it.each([
    [{ upstream: "http://127.0.0.1:1/mcp" }, /options.upstream must be a function/],
    [{ upstream: () => ({}), path: "mcp" }, /options.path must start with/],
    [{ upstream: () => ({}), scopeHeader: "x api" }, /options.scopeHeader must be a header name/],
    [{ upstream: () => ({}), waitMs: -1 }, /options.waitMs/],
    ...tlsCases.map(([extra, message]): [object, RegExp] => [{ upstream: () => ({}), ...extra }, message]),
  ])("mcpHttpGateway %#", async (extra, message) => {
    const { mcpHttpGateway } = await import("../../src/gateway/index.js");
    const { memoryStore } = await import("../../src/index.js");
    await expect(mcpHttpGateway({ store: memoryStore(), ...(extra as object) } as never)).rejects.toThrow(
      message,
    );
  });
});
