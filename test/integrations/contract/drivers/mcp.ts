import { idempotencyKey } from "../../../../src/index.js";
import {
  IDEMPOTENCY_KEY_META,
  type McpCallClient,
  type McpCallToolResult,
  mcpDedupe,
  mcpTool,
  mcpTools,
  REFUSAL_META,
  Refusal,
} from "../../../../src/mcp/index.js";
import type { Driver } from "../driver.js";
import { LEASE_MS, type Seen, type World } from "../world.js";
import { endlessServer, ownerHandler, serve } from "./mcp-server.js";

const NOT_MODEL_FACING =
  "it makes a harness Tool: the application's own harness.call hands the result to its code, which shows the model";
/** Shared with the v2 driver: what mcpDedupe cannot see of a call. */
export const SERVER_SCHEMA_DEFAULT =
  "the SDK hands a server's handler the arguments after its own input schema filled defaults, and no raw arguments, " +
  "so a server whose schema generates a value per call fingerprints each call anew (README: mcpDedupe)";
/** Shared with the v2 driver. */
export const NO_APPROVAL =
  "MCP has no approval in the protocol (a client's confirmation is its own UI), and the MCP adapters take no " +
  "requiresApproval";
const WIRE_IS_JSON = "results cross the MCP wire as JSON text: the client never holds a value JSON cannot";

/** What the client saw of a tool result: its text, and the result itself when it is an error. */
export function seen(result: McpCallToolResult): Seen {
  const text = result.content.map((part) => (part.type === "text" ? part.text : "")).join("\n");
  if (result.isError !== true) return { text };
  // The refusal mark is the owner's word for an unknown outcome, read as the neutral name the table checks.
  const unknown = result._meta?.[REFUSAL_META] === Refusal.outcomeUnknown;
  return {
    text,
    error: unknown ? Object.assign(new Error(text), { name: "OutcomeUnknownError", result }) : result,
  };
}

/** `mcpTool` on the client `connect` makes, called through the harness: the v1 and v2 rows differ in the SDK only. */
export function mcpToolDriverOn(
  name: string,
  connect: (world: World) => Promise<McpCallClient & { close(): Promise<void> }>,
): Driver {
  return {
    name,
    notModelFacing: NOT_MODEL_FACING,
    cannot: { approval: NO_APPROVAL, "non-JSON result": WIRE_IS_JSON },
    async open(world) {
      const client = await connect(world);
      const harness = world.harness();
      const { name: tool, effect, noEffect } = world.spec;
      const made = mcpTool(client, { name: tool, effect, noEffect });
      return {
        async call(args, options) {
          return seen(await harness.call(world.taskId, made, args as never, options));
        },
        close: () => client.close(),
      };
    },
  };
}

/** `mcpTool` (v1 SDK) on a real server over the in-memory transport. */
export const mcpToolDriver = mcpToolDriverOn("mcpTool (MCP SDK v1)", (world) => serve(world));

/** `mcpTools` (v1 SDK): the listed tool, called through the harness; and the listing of an endless server. */
export const mcpToolsDriver: Driver = {
  name: "mcpTools (MCP SDK v1)",
  notModelFacing: NOT_MODEL_FACING,
  cannot: { approval: NO_APPROVAL, "non-JSON result": WIRE_IS_JSON },
  async open(world) {
    const client = await serve(world);
    const harness = world.harness();
    const listed = await mcpTools(client, {
      effects: { [world.spec.name]: world.spec.effect },
      noEffect: world.spec.noEffect,
    });
    const { tool } = listed[world.spec.name]!;
    return {
      async call(args, options) {
        return seen(await harness.call(world.taskId, tool, args as never, options));
      },
      close: () => client.close(),
    };
  },
  async listEndless() {
    const client = await endlessServer();
    try {
      return await mcpTools(client);
    } finally {
      await client.close();
    }
  },
};

export const OWNER = "it is the owner: the client that called it tells its model (mcpTool's row)";
export const OWNER_CANNOT = {
  approval: NO_APPROVAL,
  "non-JSON result": WIRE_IS_JSON,
  "schema default": SERVER_SCHEMA_DEFAULT,
};

/** `mcpDedupe` (v1 SDK) as the owner: the handler is the effect, a plain client sends the key the harness would derive. */
export const mcpDedupeDriver: Driver = {
  name: "mcpDedupe (MCP SDK v1 server)",
  notModelFacing: OWNER,
  cannot: OWNER_CANNOT,
  async open(world) {
    const client = await serve(world, deduped(world, ownerHandler(world)));
    return {
      async call(args, options) {
        return seen((await client.callTool(keyedCall(world, args), undefined, options)) as McpCallToolResult);
      },
      close: () => client.close(),
    };
  },
};

/**
 * The spec's handler behind `mcpDedupe`, for either SDK line. A keyed effect is one whose rerun after a takeover is
 * safe (`rerunAfterTakeover`); the handler says a refusal had no effect the way an owner does, with `noEffect: true`
 * on what it throws.
 */
export function deduped<H extends (args: object, extra: object) => Promise<McpCallToolResult>>(
  world: World,
  handler: H,
): H {
  const dedupe = mcpDedupe({
    store: world.store(),
    leaseMs: LEASE_MS,
    rerunAfterTakeover: world.spec.effect === "keyed",
    onError: () => {
      if (world.faults.throwingHook) throw new Error("the telemetry exporter is down");
    },
  });
  return dedupe(world.spec.name, async (args: object, extra: object) => {
    try {
      return await handler(args, extra);
    } catch (error) {
      if (world.spec.noEffect?.(error) === true) Object.assign(error as object, { noEffect: true });
      throw error;
    }
  }) as unknown as H;
}

/** A plain client's `tools/call` with the key the harness would derive for `args`. */
export function keyedCall(world: World, args: unknown) {
  const key = idempotencyKey(world.taskId, world.spec.name, args);
  return { name: world.spec.name, arguments: args as never, _meta: { [IDEMPOTENCY_KEY_META]: key } };
}
