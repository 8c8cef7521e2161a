import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { Agent, fetch as undiciFetch } from "undici";
import { afterAll, describe, expect, it } from "vitest";
import { mcpHttpGateway } from "../../src/gateway/index.js";
import { IDEMPOTENCY_KEY_META, REPLAYED_META } from "../../src/mcp/meta.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { runCli } from "../support/cli.js";
import { type Holder, LOOKALIKES, testPki } from "./pki.js";
import { mcpUpstream, scopesIn, startGateway, tempRuns } from "./support.js";

// The MCP gateway's Streamable HTTP listener with TLS and `scopeMtls`, in front of the MCP server of
// test/gateway/fixtures/http-upstream.mjs (which counts its effects in its own file), with the certificates of
// test/gateway/pki.ts; the SDK's real Client reaches it over HTTPS through undici, presenting a client certificate.
const runs = tempRuns("idemkey-gateway-mcp-mtls-");
const pki = testPki(runs.dir);

const agents: Agent[] = [];
afterAll(() => Promise.all(agents.map((agent) => agent.close())));

/** A fetch over HTTPS that trusts the test CA and presents `holder`'s certificate (or none). */
function fetchAs(holder: Holder | undefined): FetchLike {
  const dispatcher = new Agent({
    connect: {
      ca: pki.read("ca", "crt"),
      ...(holder === undefined ? {} : { cert: pki.read(holder, "crt"), key: pki.read(holder, "key") }),
    },
  });
  agents.push(dispatcher);
  return (url, init) => undiciFetch(url, { ...(init as object), dispatcher }) as unknown as Promise<Response>;
}

async function connect(url: string, holder: Holder) {
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: fetchAs(holder) });
  const client = new Client({ name: "agent", version: "1.0.0" });
  await client.connect(transport);
  return { client, session: transport.sessionId! };
}

const keyed = (text: string, key: string) => ({
  name: "append",
  arguments: { text },
  _meta: { [IDEMPOTENCY_KEY_META]: key },
});

const call = (client: Client, text: string, key: string) =>
  client.callTool(keyed(text, key)) as Promise<CallToolResult>;

/** One JSON-RPC message posted as a client would, through `fetch` (with `session`, within that session). */
async function post(url: string, fetch: FetchLike, message: object, session?: string) {
  const response = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(session === undefined ? {} : { "mcp-session-id": session }),
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, ...message }),
  });
  return { status: response.status, type: response.headers.get("content-type"), body: await response.text() };
}

const INITIALIZE = {
  method: "initialize",
  params: {
    protocolVersion: "2025-03-26",
    capabilities: {},
    clientInfo: { name: "agent", version: "1.0.0" },
  },
};

/** `mcpHttpGateway` with the test PKI's gateway certificate and CA, scoping sessions by `scopeMtls`. */
async function serve(run: string, scopeMtls: "subject" | "fingerprint") {
  const up = await mcpUpstream(run, "json");
  const db = join(run, "gateway.db");
  const store = sqliteStore(db);
  const served = await mcpHttpGateway({
    store,
    upstream: () => new StreamableHTTPClientTransport(new URL(up.url)),
    tls: { cert: pki.read("gateway", "crt"), key: pki.read("gateway", "key"), ca: pki.read("ca", "crt") },
    scopeMtls,
  });
  return {
    url: served.url,
    db,
    effects: up.effects,
    close: async () => {
      await served.close();
      await store.close();
    },
  };
}

describe("mcpHttpGateway with mTLS: a session's scope is its client certificate", () => {
  it("two clients' same key are two scopes, two effects; each one's retry replays its own", async () => {
    const gw = await serve(runs.next(), "subject");
    try {
      expect(gw.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/mcp$/);
      const alice = await connect(gw.url, "alice");
      const bob = await connect(gw.url, "bob");
      try {
        expect((await call(alice.client, "same", "k1"))._meta?.[REPLAYED_META]).toBeUndefined();
        // Bob's k1 is his own: it runs, and is not alice's replay.
        expect((await call(bob.client, "same", "k1"))._meta?.[REPLAYED_META]).toBeUndefined();
        expect(gw.effects()).toEqual(["same", "same"]);
        expect((await call(alice.client, "same", "k1"))._meta?.[REPLAYED_META]).toBe(true);
        expect((await call(bob.client, "same", "k1"))._meta?.[REPLAYED_META]).toBe(true);
        expect(gw.effects()).toEqual(["same", "same"]);
        // Bob's certificate may not use alice's session, as another scope header may not.
        const taken = await post(
          gw.url,
          fetchAs("bob"),
          { method: "tools/call", params: keyed("taken", "k2") },
          alice.session,
        );
        expect(taken.status).toBe(403);
        expect(taken.body).toMatch(/another caller/);
        expect(gw.effects()).toEqual(["same", "same"]);
      } finally {
        await alice.client.close();
        await bob.client.close();
      }
      // The inspector names each key's caller by its certificate.
      expect(await scopesIn(gw.db)).toEqual(["O=acme,CN=alice", "O=acme,CN=bob"]);
    } finally {
      await gw.close();
    }
  });

  it("subjects Node's parsed subject reads alike (a type repeated apart or together, one RDN or two) are four scopes", async () => {
    const gw = await serve(runs.next(), "subject");
    try {
      const holders = Object.keys(LOOKALIKES) as (keyof typeof LOOKALIKES)[];
      for (const holder of holders) {
        // The same key and arguments from each: each one's own call, not a replay of the one before.
        const { client } = await connect(gw.url, holder);
        try {
          const result = await call(client, "same", "k1");
          expect(result._meta?.[REPLAYED_META]).toBeUndefined();
          expect(result.isError).toBeFalsy();
        } finally {
          await client.close();
        }
      }
      expect(gw.effects()).toEqual(["same", "same", "same", "same"]);
      // A renewed certificate (alice's subject, a new key) keeps her keys.
      const alice = await connect(gw.url, "alice");
      const renewed = await connect(gw.url, "aliceRenewed");
      try {
        expect((await call(alice.client, "alice", "k2"))._meta?.[REPLAYED_META]).toBeUndefined();
        expect((await call(renewed.client, "alice", "k2"))._meta?.[REPLAYED_META]).toBe(true);
      } finally {
        await alice.client.close();
        await renewed.client.close();
      }
      expect(gw.effects()).toEqual(["same", "same", "same", "same", "alice"]);
    } finally {
      await gw.close();
    }
    expect(await scopesIn(gw.db)).toEqual([...Object.values(LOOKALIKES), "O=acme,CN=alice"].sort());
  });

  it("a client without a certificate, or with one the CA did not sign, is refused 401 problem+json", async () => {
    const gw = await serve(runs.next(), "fingerprint");
    try {
      const none = await post(gw.url, fetchAs(undefined), INITIALIZE);
      expect(none.status).toBe(401);
      expect(none.type).toContain("application/problem+json");
      expect(JSON.parse(none.body)).toMatchObject({
        type: "https://idemkey.dev/problems/client-certificate-required",
        status: 401,
      });
      // Mallory's certificate says CN=alice but no one the gateway trusts signed it.
      const forged = await post(gw.url, fetchAs("mallory"), {
        method: "tools/call",
        params: keyed("forged", "k3"),
      });
      expect(forged.status).toBe(401);
      expect(JSON.parse(forged.body).detail).toMatch(/not accepted/);
      expect(gw.effects()).toEqual([]);
      const alice = await connect(gw.url, "alice");
      try {
        expect((await call(alice.client, "hers", "k3")).isError).toBeFalsy();
      } finally {
        await alice.client.close();
      }
      expect(gw.effects()).toEqual(["hers"]);
    } finally {
      await gw.close();
    }
  });
});

describe("idemkey gateway mcp --listen with --tls-*", () => {
  it("listens with HTTPS (its https:// URL printed) and scopes by --scope-mtls; a client reaches it", async () => {
    const run = runs.next();
    const up = await mcpUpstream(run, "json");
    const gw = await startGateway("mcp", join(run, "gateway.db"), [
      ...pki.flags(),
      "--scope-mtls",
      "fingerprint",
      "--upstream-url",
      up.url,
    ]);
    expect(gw.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const alice = await connect(gw.url, "alice");
    try {
      expect((await call(alice.client, "once", "k4"))._meta?.[REPLAYED_META]).toBeUndefined();
      expect((await call(alice.client, "once", "k4"))._meta?.[REPLAYED_META]).toBe(true);
    } finally {
      await alice.client.close();
    }
    expect(up.effects()).toEqual(["once"]);
    expect((await post(gw.url, fetchAs(undefined), INITIALIZE)).status).toBe(401);
    expect(up.effects()).toEqual(["once"]);
  });

  const cases: [string, string[], RegExp][] = [
    [
      "--scope-mtls without --tls-ca",
      ["--listen", "0", ...pki.flags({ ca: false }), "--scope-mtls", "subject"],
      /--scope-mtls needs --tls-ca/,
    ],
    ["--tls-cert without --listen", ["--tls-cert", pki.file("gateway", "crt")], /--tls-cert needs --listen/],
    ["--scope-mtls without --listen", ["--scope-mtls", "subject"], /--scope-mtls needs --listen/],
    [
      "--scope-mtls with --scope-header",
      ["--listen", "0", "--scope-header", "x-api-key", ...pki.flags(), "--scope-mtls", "subject"],
      /two scopes/,
    ],
  ];
  it.each(cases)("bad flags print one line and exit 2: %s", async (_, args, message) => {
    const { code, stdout, stderr } = await runCli([
      "gateway",
      "mcp",
      "--store",
      "sqlite:x.db",
      ...args,
      "--",
      "node",
    ]);
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr).toMatch(/^idemkey: [^\n]+\n$/);
    expect(stderr).toMatch(message);
  });
});
