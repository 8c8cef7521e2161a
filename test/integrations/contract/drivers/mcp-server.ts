import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { type CallToolResult, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { idempotencyKeyOf } from "../../../../src/mcp/index.js";
import type { World } from "../world.js";

type Handler = (args: object, extra: object) => Promise<CallToolResult>;

/** The spec's tool as an MCP (v1) server handler: the owner's receipt as JSON text; a failure throws. */
export function ownerHandler(world: World): Handler {
  return async (_args, extra) => {
    const value = await world.owner.act(idempotencyKeyOf(extra as { _meta?: { [k: string]: unknown } }));
    return { content: [{ type: "text", text: JSON.stringify(value) }] };
  };
}

/** A real `McpServer` serving `handler` as the spec's tool, and a real `Client` connected to it in memory. */
export async function serve(world: World, handler: Handler = ownerHandler(world)): Promise<Client> {
  const server = new McpServer({ name: "payments", version: "1.0.0" });
  server.registerTool(
    world.spec.name,
    { description: "Refund a payment.", inputSchema: world.shape() },
    handler as never,
  );
  return connect(server.server);
}

async function connect(server: Server): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "agent", version: "1.0.0" });
  await client.connect(clientSide);
  return client;
}

/**
 * A server whose listing never ends: every page names a new cursor. It gives up after `pages` so that an unbounded
 * client fails the test instead of starving the event loop.
 */
export async function endlessServer(pages = 20_000): Promise<Client> {
  const server = new Server({ name: "endless-pager", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async (request) => {
    const page = Number(request.params?.cursor ?? 0);
    const tools = [{ name: `tool_${page}`, inputSchema: { type: "object" as const } }];
    return page + 1 < pages ? { tools, nextCursor: String(page + 1) } : { tools };
  });
  return connect(server);
}
