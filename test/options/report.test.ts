import { afterEach, describe, expect, it, vi } from "vitest";
import { ToolCallError } from "../../src/errors/tool-call-error.js";
import { createHarness, defineTool } from "../../src/harness/index.js";
import { mcpDedupe } from "../../src/mcp/index.js";
import { idempotencyEngine } from "../../src/owner/engine.js";
import { memoryStore } from "../../src/store/memory.js";
import type { Store } from "../../src/store/types.js";

const META = "dev.idemkey/idempotency-key";

/**
 * A store that cannot release a key: a failed call's answer is decided by then (the key is released so a retry runs
 * again), so only the error hook can hear of it.
 */
function failingSaves(): Store {
  return { ...memoryStore(), delete: async () => Promise.reject(new Error("disk full")) };
}

function warnings() {
  const seen: { message: string; type: string | undefined }[] = [];
  vi.spyOn(process, "emitWarning").mockImplementation(((message: string | Error, type?: unknown) => {
    seen.push({ message: String(message), type: typeof type === "string" ? type : undefined });
  }) as typeof process.emitWarning);
  return seen;
}

afterEach(() => {
  vi.restoreAllMocks();
});

async function mcpCall(options: Parameters<typeof mcpDedupe>[0]) {
  // A handler that said it did nothing: the key is released (an error result without that is saved instead).
  const handler = mcpDedupe(options)(
    "create",
    async (): Promise<{ content: { type: "text"; text: string }[] }> => {
      throw new ToolCallError("failed", { noEffect: true });
    },
  );
  return handler({}, { _meta: { [META]: "k-1" } });
}

async function httpCall(options: Omit<Parameters<typeof idempotencyEngine>[0], "scope">) {
  const engine = idempotencyEngine({ ...options, scope: "single-tenant" });
  const decision = await engine.begin({
    method: "POST",
    target: "/x",
    keyFields: ["k-1"],
    contentType: undefined,
    body: () => ({ bytes: new Uint8Array() }),
    request: {},
  });
  if (decision.action !== "run") throw new Error(`expected run, got ${decision.action}`);
  // A handler that said it did nothing: the key is released (an answer without that mark is saved instead).
  await decision.lock.finish({
    status: 503,
    headers: [],
    body: new Uint8Array(),
    threw: false,
    noEffect: true,
  });
}

describe("errors nobody can be told about go one way", () => {
  it("to the hook: onError of the middleware and of MCP dedupe, with the same event shape", async () => {
    const http: unknown[] = [];
    const mcp: unknown[] = [];
    const seen = warnings();
    await httpCall({ store: failingSaves(), onError: (e) => http.push(e) });
    await mcpCall({ store: failingSaves(), scope: () => "acct", onError: (e) => mcp.push(e) });
    expect(http).toEqual([expect.objectContaining({ phase: "release", key: "k-1", scope: "" })]);
    expect(mcp).toEqual([
      expect.objectContaining({ phase: "release", key: "k-1", scope: "acct", tool: "create" }),
    ]);
    expect((mcp[0] as { error: Error }).error.message).toBe("disk full");
    expect(seen).toEqual([]);
  });

  it("without a hook, to an IdemkeyWarning (never console)", async () => {
    const seen = warnings();
    const console = vi.spyOn(globalThis.console, "error").mockImplementation(() => {});
    await httpCall({ store: failingSaves() });
    await mcpCall({ store: failingSaves() });
    expect(console).not.toHaveBeenCalled();
    expect(seen.map((w) => w.type)).toEqual(["IdemkeyWarning", "IdemkeyWarning"]);
    expect(seen[0]!.message).toMatch(/release failed .*k-1.*disk full/);
    expect(seen[1]!.message).toMatch(/release failed .*"create".*disk full/);
  });

  it("a hook that throws is reported the same way, and the call still ends", async () => {
    const seen = warnings();
    const hook = () => {
      throw new Error("logger down");
    };
    await httpCall({ store: failingSaves(), onError: hook });
    await mcpCall({ store: failingSaves(), onError: hook });
    const harness = createHarness({ onEvent: hook });
    await harness.call("t", defineTool({ name: "t", effect: "keyed", run: async () => 1 }), {});
    expect(seen.map((w) => w.type)).toEqual(["IdemkeyWarning", "IdemkeyWarning", "IdemkeyWarning"]);
    for (const w of seen) expect(w.message).toMatch(/^idemkey: (onError|onEvent) threw on .*logger down$/);
  });
});
