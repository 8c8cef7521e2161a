import { describe, expect, it } from "vitest";
import { createHarness, defineTool } from "../../src/harness/index.js";
import { mcpDedupe } from "../../src/mcp/index.js";
import { idempotencyEngine, storeKey } from "../../src/owner/engine.js";
import { memoryStore } from "../../src/store/memory.js";
import { ledgerKey, StorePrefix, scopedKey } from "../../src/store/scoped-key.js";

const META = "dev.idemkey/idempotency-key";

describe("scopedKey", () => {
  it("keeps each user of a shared store in its own namespace", () => {
    expect(StorePrefix).toEqual({ ledger: "call:", http: "http:", mcp: "mcp:", a2a: "a2a:" });
    expect(new Set(Object.values(StorePrefix)).size).toBe(4);
    expect(scopedKey(StorePrefix.http, "a", "bc")).toMatch(/^http:[0-9a-f]{64}$/);
    expect(scopedKey(StorePrefix.mcp, "a", "bc")).toMatch(/^mcp:[0-9a-f]{64}$/);
    expect(ledgerKey("3f2a")).toBe("call:3f2a");
  });

  it("keeps (scope, key) pairs apart that a concatenation would join", () => {
    expect(scopedKey(StorePrefix.http, "a", "bc")).not.toBe(scopedKey(StorePrefix.http, "ab", "c"));
    expect(scopedKey(StorePrefix.http, "", "k")).toBe(scopedKey(StorePrefix.http, "", "k"));
    expect(scopedKey(StorePrefix.http, "a", "k").slice(5)).toBe(
      scopedKey(StorePrefix.mcp, "a", "k").slice(4),
    );
  });

  it("is where the harness, the middleware and MCP dedupe put their records", async () => {
    const store = memoryStore();
    const harness = createHarness({ store });
    const tool = defineTool({ name: "t", effect: "keyed", run: async () => 1 });
    await harness.call("task", tool, {});
    const engine = idempotencyEngine({ store, scope: () => "acct" });
    const decision = await engine.begin({
      method: "POST",
      target: "/charges",
      keyFields: ["k-1"],
      contentType: undefined,
      body: () => ({ bytes: new Uint8Array() }),
      request: {},
    });
    expect(decision.action).toBe("run");
    const dedupe = mcpDedupe({ store, scope: () => "acct" });
    const handler = dedupe("create", async () => ({ content: [] }));
    await handler({}, { _meta: { [META]: "k-1" } });

    const keys = (await store.list({})).map((r) => r.key).sort();
    expect(keys).toEqual(
      [
        ledgerKey(harness.key("task", tool, {})),
        scopedKey(StorePrefix.http, "acct", "k-1"),
        scopedKey(StorePrefix.mcp, "acct", "k-1"),
      ].sort(),
    );
    expect(storeKey("acct", "k-1")).toBe(scopedKey(StorePrefix.http, "acct", "k-1"));
  });
});
