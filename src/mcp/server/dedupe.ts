import { hadNoEffect } from "../../harness/retry.js";
import { NO_EFFECT_META, REFUSAL_META, REPLAYED_META, Refusal } from "../meta.js";
import type { McpCallToolResult } from "../types.js";
import { dedupeCall } from "./dedupe-call.js";
import { type McpDedupeOptions, type McpHandlerExtra, resolveOptions } from "./dedupe-options.js";
import { InvalidIdempotencyKeyError } from "./invalid-key-error.js";
import { isLookup, lookupResult } from "./lookup-call.js";
import { idempotencyKeyOf } from "./read-key.js";

// R is the handler's own result type (its SDK's CallToolResult), so the wrapped handler fits that SDK's registerTool.
type Handler<A, E, R> = (args: A, extra: E) => R | Promise<R>;
/** The handler's result, or a replay or refusal of it: the same type, with the fields idemkey may set. */
type Result<R> = R & McpCallToolResult;

/** Wraps one tool handler: `name` is the tool's name, so that a key reused for another tool is refused. */
export type McpDedupe<Extra extends McpHandlerExtra> = <A, E extends Extra, R extends McpCallToolResult>(
  name: string,
  handler: Handler<A, E, R>,
) => (args: A, extra: E) => Promise<Result<R>>;

/**
 * Dedupes tool calls at the MCP server on the idempotency key in their `_meta` (`"dev.idemkey/idempotency-key"`,
 * sent by `mcpTool`), with the same rules as the HTTP middleware: the first call with a key runs the tool and its
 * result is saved; a repeat with the same tool and arguments gets the saved result (with `"dev.idemkey/replayed":
 * true` in its `_meta`); the same key with another tool or other arguments is refused (`key_reused`, which the
 * client turns into `IdempotencyConflictError`); a repeat while the first still runs is refused as in flight, to be
 * retried. Refusals are error results carrying `"dev.idemkey/refusal"` in their `_meta`; the tool does not run.
 *
 * A call whose `_meta` also says `"dev.idemkey/lookup": true` is a lookup: it is answered from the record of its key
 * in the caller's scope and the tool does not run (see `LOOKUP_META`; `mcpLookupReconcile` asks it).
 *
 * What the handler answers is saved and replayed, error results included, as Stripe does (`save` overrides it). A
 * handler that throws may have acted before it threw, so its key is not released for a rerun: it is recorded as
 * `outcome_unknown` and retries get that refusal (the first caller gets the SDK's error result for the throw).
 * Only an error that says `noEffect: true` (`throw new ToolCallError("insufficient funds", { noEffect: true })`)
 * releases the key: the call is answered with an error result carrying its message and `"dev.idemkey/no-effect":
 * true`, from which `mcpTool` frees its own key too, and the identical call may run later.
 *
 * For tools registered with an `inputSchema` (whose handler takes `(args, extra)`), on either SDK line: v1's `extra`
 * (`extra._meta`, `extra.authInfo`) and v2's context (`ctx.mcpReq._meta`, `ctx.http.authInfo`) are both read.
 *
 * @example
 * const idempotent = mcpDedupe({ store: sqliteStore("./mcp.db") });
 * server.registerTool("create_issue", { inputSchema }, idempotent("create_issue", async (args) => createIssue(args)));
 */
export function mcpDedupe<Extra extends McpHandlerExtra = McpHandlerExtra>(
  options: McpDedupeOptions<Extra>,
): McpDedupe<Extra> {
  const { store, scope, required, leaseMs, retentionMs, save, rerunAfterTakeover, onError } =
    resolveOptions(options);

  return function dedupe<A, E extends Extra, R extends McpCallToolResult>(
    name: string,
    handler: Handler<A, E, R>,
  ) {
    if (typeof name !== "string" || name.length === 0) {
      throw new TypeError(`name must be the tool's name, a non-empty string, got ${typeof name}`);
    }
    if (typeof handler !== "function") throw new TypeError(`the handler of "${name}" must be a function`);

    const refuse = (refusal: Refusal, text: string) => refusalResult(refusal, text) as Result<R>;
    // Without a key there is nothing to release; a no-effect throw still tells the client so.
    const run = async (args: A, extra: E): Promise<Result<R>> => {
      try {
        return await handler(args, extra);
      } catch (error) {
        if (hadNoEffect(error)) return noEffectResult(error) as Result<R>;
        throw error;
      }
    };
    return async function idempotent(args: A, extra: E): Promise<Result<R>> {
      let key: string | undefined;
      let lookup: boolean;
      try {
        key = idempotencyKeyOf(extra);
        lookup = isLookup(extra?._meta ?? extra?.mcpReq?._meta);
      } catch (error) {
        if (error instanceof InvalidIdempotencyKeyError) return refuse(Refusal.keyInvalid, error.message);
        throw error;
      }
      if (key === undefined) {
        if (lookup)
          return refuse(Refusal.keyMissing, `A lookup of "${name}" needs the idempotency key in _meta.`);
        if (!required) return run(args, extra);
        return refuse(Refusal.keyMissing, `The tool "${name}" needs an idempotency key in _meta.`);
      }
      const who = await scope(extra);
      if (typeof who !== "string") {
        throw new TypeError(`options.scope must return a string, got ${who === null ? "null" : typeof who}`);
      }
      const outcome = await dedupeCall<Result<R>>({
        store,
        leaseMs,
        retentionMs,
        rerunAfterTakeover,
        scope: who,
        key,
        tool: name,
        args,
        run: async () => await handler(args, extra),
        // Stripe's rule: whatever the handler answered, error results included, is the answer a retry gets.
        serialize: (result) => ((save(result) ?? true) ? JSON.stringify(result) : undefined),
        waitMs: 0,
        pollMs: 0,
        onError,
        lookup,
      });
      switch (outcome.kind) {
        case "looked_up":
          return lookupResult(outcome.found) as Result<R>;
        case "ran":
          return outcome.result;
        case "no_effect":
          return noEffectResult(outcome.error) as Result<R>;
        case "refused":
          return refuse(outcome.refusal, outcome.text);
        case "replayed": {
          const saved = JSON.parse(outcome.saved) as Result<R>;
          return { ...saved, _meta: { ...saved._meta, [REPLAYED_META]: true } };
        }
      }
    };
  };
}

/** The answer to a handler that threw with `noEffect: true`: its message, marked so that the client frees the key. */
function noEffectResult(error: unknown): McpCallToolResult {
  const text = error instanceof Error ? error.message : String(error);
  return { content: [{ type: "text", text }], isError: true, _meta: { [NO_EFFECT_META]: true } };
}

function refusalResult(refusal: Refusal, text: string): McpCallToolResult {
  return { content: [{ type: "text", text }], isError: true, _meta: { [REFUSAL_META]: refusal } };
}
