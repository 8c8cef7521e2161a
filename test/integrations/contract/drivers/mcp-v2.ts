import { Client, InMemoryTransport } from "@modelcontextprotocol/client";
import { McpServer } from "@modelcontextprotocol/server";
import { idempotencyKeyOf, type McpCallToolResult } from "../../../../src/mcp/index.js";
import type { Driver } from "../driver.js";
import type { World } from "../world.js";
import { deduped, keyedCall, mcpToolDriverOn, OWNER, OWNER_CANNOT, seen } from "./mcp.js";

type Handler = (args: object, ctx: object) => Promise<McpCallToolResult>;

/** The spec's tool on a v2 `McpServer` (its handlers get `ctx.mcpReq._meta`), and a v2 `Client` in memory. */
async function serveV2(world: World, wrap: (handler: Handler) => Handler = (h) => h): Promise<Client> {
  const server = new McpServer({ name: "payments-v2", version: "2.0.0" });
  const handler: Handler = async (_args, ctx) => {
    const value = await world.owner.act(idempotencyKeyOf(ctx as never));
    return { content: [{ type: "text", text: JSON.stringify(value) }] };
  };
  server.registerTool(
    world.spec.name,
    { description: "Refund a payment.", inputSchema: world.schema() },
    wrap(handler) as never,
  );
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "agent", version: "1.0.0" });
  await client.connect(clientSide);
  return client;
}

/** `mcpTool` on the v2 SDK (`@modelcontextprotocol/client` against `@modelcontextprotocol/server`). */
export const mcpToolV2Driver = mcpToolDriverOn("mcpTool (MCP SDK v2)", (world) => serveV2(world));

/** `mcpDedupe` on a v2 server, called by a plain v2 client with the key the harness would derive. */
export const mcpDedupeV2Driver: Driver = {
  name: "mcpDedupe (MCP SDK v2 server)",
  notModelFacing: OWNER,
  cannot: OWNER_CANNOT,
  async open(world) {
    const client = await serveV2(world, (handler) => deduped(world, handler));
    return {
      async call(args, options) {
        return seen((await client.callTool(keyedCall(world, args), options)) as McpCallToolResult);
      },
      close: () => client.close(),
    };
  },
};
