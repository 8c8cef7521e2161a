import type { NoEffect } from "../../harness/retry.js";
import type { Tool } from "../../harness/types.js";
import { Effect } from "../../harness/types.js";
import { checkNumber, numberOption } from "../../options/number-option.js";
import type { McpCallToolResult, McpToolAnnotations, McpToolDefinition } from "../types.js";
import { type McpArguments, type McpCallClient, mcpTool } from "./client-tool.js";
import { listAllTools } from "./list-pages.js";

/**
 * The methods of an MCP `Client` that `mcpTools` uses: a connected `Client` of either SDK line fits. (v2's
 * `listTools()` walks every page itself and answers without `nextCursor`; v1's is walked here.)
 */
export interface McpListClient<D extends McpToolDefinition = McpToolDefinition> extends McpCallClient {
  // biome-ignore lint/suspicious/noExplicitAny: the two SDK lines' options parameters differ; either is accepted.
  listTools(params?: { cursor?: string }, ...rest: any[]): Promise<{ tools: D[]; nextCursor?: string }>;
  /** The server's name and version as it introduced itself, read to name it in an `McpListError`. */
  getServerVersion?(): { name?: string } | undefined;
}

export interface McpToolsOptions {
  /**
   * The effect of each tool, by its name on the server; it wins over annotations. A name the server does not list
   * is a `TypeError`, so that a typo cannot leave a tool on the default.
   * @default {}
   * @example effects: { create_issue: "keyed", search_issues: "read" }
   */
  effects?: { [name: string]: Effect };
  /**
   * Maps the server's tool annotations to effects: `readOnlyHint: true` gives `read` (run and retried freely, never
   * recorded), `idempotentHint: true` gives `idempotent` (re-run freely). Annotations are the server's claims about
   * itself, so only set this for a server you trust: an untrusted one that marks a write read-only would have it
   * repeated on every retry.
   * @default false
   */
  trustAnnotations?: boolean;
  /**
   * The effect of a tool with no entry in `effects` and no trusted annotation that decides. `unguarded` never
   * repeats a call that may have reached the server, at the price of an `OutcomeUnknownError` after an ambiguous
   * failure; set `keyed` for a server that honours the idempotency key (it runs `mcpDedupe`).
   * @default "unguarded"
   */
  defaultEffect?: Effect;
  /**
   * Put before each tool's name to form the name its keys are derived from (`keyName` of `mcpTool`), so that two
   * servers' tools of the same name get their own keys.
   * @default ""
   * @example keyPrefix: "github."
   */
  keyPrefix?: string;
  /**
   * How long each call waits for the server's answer, in milliseconds (`timeoutMs` of `mcpTool`), for every tool.
   * A lost answer then fails after this long instead of the SDK's own default: a `keyed` tool is retried with its
   * key, an `unguarded` one ends in `OutcomeUnknownError`.
   * @default the SDK's default request timeout (60000)
   */
  timeoutMs?: number;
  /**
   * Says which error answers certainly had no effect, for every tool (`noEffect` of `mcpTool`): the server's
   * validation errors, a refusal you know it answers before doing anything. It receives the `McpToolError`, whose
   * `result` (or `answer`) is the error result and `tool` the tool's name; return `true` for "nothing happened",
   * `undefined` for "cannot tell". Without it an error result of an `unguarded` tool ends in `OutcomeUnknownError`
   * (the SDK servers answer a handler that threw after its effect the same way), unless the server marked it
   * `"dev.idemkey/no-effect"` as `mcpDedupe` does.
   * @default none
   * @example noEffect: (error) => isMcpToolError(error) && error.result.content[0]?.text?.startsWith("Invalid arguments")
   */
  noEffect?: NoEffect;
  /**
   * The most `tools/list` pages read from a server that answers one page at a time (a v1 client); past it, or at a
   * cursor the server already gave, the listing stops with `McpListError`, so that a server whose cursor never ends
   * cannot take the memory and the event loop.
   * @default 100
   */
  maxPages?: number;
}

/** A tool the server lists: its definition as listed (name, description, input schema), and the idemkey tool. */
export interface McpListedTool<D extends McpToolDefinition = McpToolDefinition> {
  /** The definition as the server listed it, unchanged (typed as your SDK's): hand its description and schema to the model. */
  readonly definition: D;
  /** The tool for `harness.call`, as `mcpTool` makes it. */
  readonly tool: Tool<McpArguments, McpCallToolResult>;
  /** The effect chosen, and why. */
  readonly effect: Effect;
  readonly effectFrom: "effects" | "annotations" | "default";
}

const EFFECTS: readonly string[] = Object.values(Effect);

/**
 * Lists every tool of a connected MCP server (all pages, up to `maxPages`) and turns each into a tool for
 * `harness.call`, with an effect from `effects`, from the server's annotations when `trustAnnotations` is set, or
 * `defaultEffect`. A listing that does not end fails with `McpListError`, which names the server.
 *
 * @example
 * const tools = await mcpTools(client, { effects: { create_issue: "keyed" }, keyPrefix: "tracker." });
 * await harness.call(taskId, tools.create_issue!.tool, args);
 */
export async function mcpTools<D extends McpToolDefinition>(
  client: McpListClient<D>,
  options: McpToolsOptions = {},
): Promise<{ [name: string]: McpListedTool<D> }> {
  if (typeof client !== "object" || client === null || typeof client.listTools !== "function") {
    throw new TypeError("client must be a connected MCP Client (it has no listTools method)");
  }
  const { effects, trustAnnotations, defaultEffect, keyPrefix, timeoutMs, noEffect, maxPages } =
    resolveOptions(options);
  const definitions = await listAllTools(client, maxPages);

  const listed = new Set(definitions.map((d) => d.name));
  for (const name of Object.keys(effects)) {
    if (!listed.has(name)) {
      throw new TypeError(`options.effects.${name} names a tool the server does not list`);
    }
  }
  const out: { [name: string]: McpListedTool<D> } = {};
  for (const definition of definitions) {
    const { name } = definition;
    const fromAnnotations = trustAnnotations ? annotatedEffect(definition.annotations) : undefined;
    const [effect, effectFrom] =
      effects[name] !== undefined
        ? [effects[name], "effects" as const]
        : fromAnnotations !== undefined
          ? [fromAnnotations, "annotations" as const]
          : [defaultEffect, "default" as const];
    const tool = mcpTool(client, { name, keyName: keyPrefix + name, effect, timeoutMs, noEffect });
    out[name] = Object.freeze({ definition, tool, effect, effectFrom });
  }
  return out;
}

/** What a trusted server's annotations say; `undefined` when they do not decide. */
export function annotatedEffect(annotations: McpToolAnnotations | undefined): Effect | undefined {
  if (annotations?.readOnlyHint === true) return Effect.read;
  if (annotations?.idempotentHint === true) return Effect.idempotent;
  return undefined;
}

type Resolved = Required<Omit<McpToolsOptions, "timeoutMs" | "noEffect">> &
  Pick<McpToolsOptions, "timeoutMs" | "noEffect">;

function resolveOptions(options: McpToolsOptions): Resolved {
  if (typeof options !== "object" || options === null) {
    throw new TypeError(`options must be an object, got ${options === null ? "null" : typeof options}`);
  }
  const {
    effects = {},
    trustAnnotations = false,
    defaultEffect = Effect.unguarded,
    keyPrefix = "",
    timeoutMs,
    noEffect,
  } = options;
  if (typeof effects !== "object" || effects === null)
    throw new TypeError("options.effects must be an object");
  for (const [name, effect] of Object.entries(effects)) {
    if (!EFFECTS.includes(effect)) {
      throw new TypeError(
        `options.effects.${name} must be one of ${EFFECTS.join(", ")}, got ${String(effect)}`,
      );
    }
  }
  if (typeof trustAnnotations !== "boolean") {
    throw new TypeError(`options.trustAnnotations must be a boolean, got ${typeof trustAnnotations}`);
  }
  if (!EFFECTS.includes(defaultEffect)) {
    throw new TypeError(
      `options.defaultEffect must be one of ${EFFECTS.join(", ")}, got ${String(defaultEffect)}`,
    );
  }
  if (typeof keyPrefix !== "string")
    throw new TypeError(`options.keyPrefix must be a string, got ${typeof keyPrefix}`);
  if (timeoutMs !== undefined) checkNumber("options.timeoutMs", timeoutMs, { exclusive: true });
  if (noEffect !== undefined && typeof noEffect !== "function") {
    throw new TypeError(
      `options.noEffect must be a function (error) => boolean | undefined, got ${typeof noEffect}`,
    );
  }
  const maxPages = numberOption("options.maxPages", options.maxPages, 100, { min: 1, integer: true });
  return {
    effects: { ...effects },
    trustAnnotations,
    defaultEffect,
    keyPrefix,
    timeoutMs,
    noEffect,
    maxPages,
  };
}
