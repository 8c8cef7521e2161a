import { Client, InMemoryTransport } from "@modelcontextprotocol/client";
import { McpServer } from "@modelcontextprotocol/server";
import { idempotencyKey } from "../../../../src/index.js";
import {
  IDEMPOTENCY_KEY_META,
  idempotencyKeyOf,
  type McpCallToolResult,
  mcpDedupe,
  mcpTool,
} from "../../../../src/mcp/index.js";
import type { Driver } from "../driver.js";
import { LEASE_MS, type World } from "../world.js";
import { NO_APPROVAL, SERVER_SCHEMA_DEFAULT, seen } from "./mcp.js";

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

const WIRE_IS_JSON = "results cross the MCP wire as JSON text: the client never holds a value JSON cannot";

/** `mcpTool` on the v2 SDK (`@modelcontextprotocol/client` against `@modelcontextprotocol/server`). */
export const mcpToolV2Driver: Driver = {
  name: "mcpTool (MCP SDK v2)",
  notModelFacing:
    "it makes a harness Tool: the application's own harness.call hands the result to its code, which shows the model",
  cannot: { approval: NO_APPROVAL, "non-JSON result": WIRE_IS_JSON },
  async open(world) {
    const client = await serveV2(world);
    const harness = world.harness();
    const { name, effect, noEffect } = world.spec;
    const tool = mcpTool(client, { name, effect, noEffect });
    return {
      async call(args, options) {
        return seen(await harness.call(world.taskId, tool, args as never, options));
      },
      close: () => client.close(),
    };
  },
};

/** `mcpDedupe` on a v2 server, called by a plain v2 client with the key the harness would derive. */
export const mcpDedupeV2Driver: Driver = {
  name: "mcpDedupe (MCP SDK v2 server)",
  notModelFacing: "it is the owner: the client that called it tells its model (mcpTool's row)",
  cannot: { approval: NO_APPROVAL, "non-JSON result": WIRE_IS_JSON, "schema default": SERVER_SCHEMA_DEFAULT },
  async open(world) {
    const dedupe = mcpDedupe({
      store: world.store(),
      leaseMs: LEASE_MS,
      rerunAfterTakeover: world.spec.effect === "keyed",
      onError: () => {
        if (world.faults.throwingHook) throw new Error("the telemetry exporter is down");
      },
    });
    const client = await serveV2(
      world,
      (handler) =>
        dedupe(world.spec.name, async (args: object, ctx: object) => {
          try {
            return await handler(args, ctx);
          } catch (error) {
            if (world.spec.noEffect(error)) Object.assign(error as object, { noEffect: true });
            throw error;
          }
        }) as Handler,
    );
    return {
      async call(args, options) {
        const key = idempotencyKey(world.taskId, world.spec.name, args);
        const params = {
          name: world.spec.name,
          arguments: args as never,
          _meta: { [IDEMPOTENCY_KEY_META]: key },
        };
        return seen((await client.callTool(params, options)) as McpCallToolResult);
      },
      close: () => client.close(),
    };
  },
};
