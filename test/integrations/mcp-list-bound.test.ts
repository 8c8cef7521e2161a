import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { isMcpListError, McpListError, mcpTools } from "../../src/mcp/index.js";

// Case 5 of issue #28: a v1 server whose tools/list never ends. The SDK's in-memory transport answers through
// microtasks, so a listing that never yields keeps every timer out: the test's own timer is the witness.

/** Pages served before the server stops on its own, so that an unbounded client fails here instead of hanging. */
const SAFETY = 5_000;

/** A v1 `Server` whose `tools/list` answers one tool per page and the cursor `next` makes of the page number. */
async function pagingServer(name: string, next: (page: number) => string) {
  const server = new Server({ name, version: "1.0.0" }, { capabilities: { tools: {} } });
  const served = { pages: 0 };
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const page = ++served.pages;
    if (page > SAFETY) throw new Error(`served ${SAFETY} pages; the client never stopped`);
    return {
      tools: [{ name: `tool_${page}`, inputSchema: { type: "object" as const } }],
      nextCursor: next(page),
    };
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "agent", version: "1.0.0" });
  await client.connect(clientSide);
  return { client, served };
}

/** A timer set before the listing; `firedAt` is the page the server had served when it fired. */
function witness(served: { pages: number }) {
  const seen: { firedAt?: number } = {};
  setTimeout(() => {
    seen.firedAt = served.pages;
  }, 1);
  return seen;
}

describe("mcpTools on a v1 server whose listing never ends", () => {
  it("stops at maxPages with McpListError naming the server, and lets timers run meanwhile", async () => {
    const { client, served } = await pagingServer("endless", (page) => `cursor-${page}`);
    const timer = witness(served);
    const error = await mcpTools(client).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(McpListError);
    expect(isMcpListError(error)).toBe(true);
    expect(error).toMatchObject({ server: "endless", pages: 100, why: "max_pages" });
    expect((error as McpListError).message).toMatch(/"endless".*maxPages 100/);
    expect(served.pages).toBe(100);
    // The timer fired while the pages were read, not after: the listing yielded to the event loop.
    expect(timer.firedAt).toBeLessThan(100);

    const fewer = await mcpTools(client, { maxPages: 3 }).catch((e: unknown) => e);
    expect(fewer).toMatchObject({ name: "McpListError", pages: 3 });
    await client.close();
  });

  it("stops at a cursor the server already gave, before reading it again", async () => {
    const { client, served } = await pagingServer("looping", (page) =>
      page < 3 ? `cursor-${page}` : "cursor-1",
    );
    const error = await mcpTools(client).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(McpListError);
    expect(error).toMatchObject({ server: "looping", pages: 3, why: "repeated_cursor" });
    expect(served.pages).toBe(3);
    await client.close();
  });

  it("still lists a server whose pages end, and validates maxPages", async () => {
    const { client } = await pagingServer("paged", (page) => (page < 4 ? `c${page}` : (undefined as never)));
    const tools = await mcpTools(client, { maxPages: 4 });
    expect(Object.keys(tools)).toEqual(["tool_1", "tool_2", "tool_3", "tool_4"]);
    for (const bad of [0, 1.5, -1, "10"]) {
      await expect(mcpTools(client, { maxPages: bad as never })).rejects.toThrow(/options\.maxPages/);
    }
    await client.close();
  });
});
