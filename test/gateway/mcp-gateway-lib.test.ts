import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { mcpGateway } from "../../src/gateway/index.js";
import { memoryStore } from "../../src/index.js";
import { IDEMPOTENCY_KEY_META, NO_EFFECT_META, REFUSAL_META, REPLAYED_META } from "../../src/mcp/meta.js";

// mcpGateway as a library, over the SDK's in-memory transports, in front of an SDK server whose tools count their
// runs in the test's own variables.
async function start(options: { waitMs?: number; deriveKeys?: string } = {}) {
  const runs = { send: 0, refuse: 0 };
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => (release = resolve));
  const server = new McpServer({ name: "owner", version: "1.0.0" });
  server.registerTool(
    "send",
    { inputSchema: { to: z.string(), slow: z.boolean().optional() } },
    async ({ slow }) => {
      runs.send++;
      if (slow) await gate;
      return { content: [{ type: "text", text: `sent ${runs.send}` }] };
    },
  );
  server.registerTool("refuse", { inputSchema: {} }, async () => {
    runs.refuse++;
    return { content: [{ type: "text", text: "no" }], isError: true, _meta: { [NO_EFFECT_META]: true } };
  });
  const [serverSide, upstream] = InMemoryTransport.createLinkedPair();
  const [clientSide, gatewaySide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const gateway = mcpGateway({ upstream, client: gatewaySide, store: memoryStore(), ...options });
  await gateway.start();
  const client = new Client({ name: "agent", version: "1.0.0" });
  await client.connect(clientSide);
  return { client, runs, release, close: () => client.close() };
}

const call = (name: string, args: Record<string, unknown>, key?: string) => ({
  name,
  arguments: args,
  ...(key === undefined ? {} : { _meta: { [IDEMPOTENCY_KEY_META]: key } }),
});

describe("mcpGateway", () => {
  it("a duplicate in flight waits for the first call's answer, or is refused with a retry hint", async () => {
    const { client, runs, release, close } = await start({ waitMs: 60_000 });
    try {
      const first = client.callTool(call("send", { to: "a", slow: true }, "k"));
      while (runs.send === 0) await new Promise((r) => setTimeout(r, 10));
      const second = client.callTool(call("send", { to: "a", slow: true }, "k"));
      release();
      expect((await first).content).toEqual([{ type: "text", text: "sent 1" }]);
      const joined = await second;
      expect(joined._meta?.[REPLAYED_META]).toBe(true);
      expect(joined.content).toEqual([{ type: "text", text: "sent 1" }]);
      expect(runs.send).toBe(1);
    } finally {
      await close();
    }
    const impatient = await start({ waitMs: 0 });
    try {
      const first = impatient.client.callTool(call("send", { to: "a", slow: true }, "k"));
      while (impatient.runs.send === 0) await new Promise((r) => setTimeout(r, 10));
      const refused = await impatient.client.callTool(call("send", { to: "a", slow: true }, "k"));
      expect(refused._meta?.[REFUSAL_META]).toBe("key_in_flight");
      expect(refused._meta?.["dev.idemkey/retry-after-ms"]).toBeGreaterThan(0);
      impatient.release();
      await first;
      expect(impatient.runs.send).toBe(1);
    } finally {
      await impatient.close();
    }
  });

  it("an error result marked no-effect releases the key; a derived key dedupes calls that carry none", async () => {
    const { client, runs, close } = await start({ deriveKeys: "ops" });
    try {
      await client.callTool(call("refuse", {}, "r"));
      await client.callTool(call("refuse", {}, "r"));
      expect(runs.refuse).toBe(2);
      const a = await client.callTool(call("send", { to: "b" }));
      const b = await client.callTool(call("send", { to: "b" }));
      expect(runs.send).toBe(1);
      expect(a._meta?.[REPLAYED_META]).toBeUndefined();
      expect(b._meta?.[REPLAYED_META]).toBe(true);
    } finally {
      await close();
    }
  });

  it("checks its options", () => {
    const t = InMemoryTransport.createLinkedPair()[0];
    expect(() => mcpGateway({ upstream: t, client: {} as never, store: memoryStore() })).toThrow(
      /options\.client/,
    );
    expect(() => mcpGateway({ upstream: t, client: t, store: memoryStore(), deriveKeys: "" })).toThrow(
      /options\.deriveKeys/,
    );
  });
});
