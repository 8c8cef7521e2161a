import { claimKey } from "../../claim/claim.js";
import type { Claim, Hold } from "../../claim/types.js";
import { LeaseLostError } from "../../errors/lease-lost-error.js";
import { hadNoEffect } from "../../harness/retry.js";
import { canonicalize } from "../../key/canonicalize.js";
import { sha256Hex } from "../../key/idempotency-key.js";
import { describeThrown } from "../../options/describe.js";
import { StorePrefix, scopedKey } from "../../store/scoped-key.js";
import { NO_EFFECT_META, REFUSAL_META, REPLAYED_META, Refusal } from "../meta.js";
import type { McpCallToolResult } from "../types.js";
import {
  type McpDedupeOptions,
  type McpErrorEvent,
  type McpHandlerExtra,
  resolveOptions,
} from "./dedupe-options.js";
import { InvalidIdempotencyKeyError } from "./invalid-key-error.js";
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
      try {
        key = idempotencyKeyOf(extra);
      } catch (error) {
        if (error instanceof InvalidIdempotencyKeyError) return refuse(Refusal.keyInvalid, error.message);
        throw error;
      }
      if (key === undefined) {
        if (!required) return run(args, extra);
        return refuse(Refusal.keyMissing, `The tool "${name}" needs an idempotency key in _meta.`);
      }
      const who = await scope(extra);
      if (typeof who !== "string") {
        throw new TypeError(`options.scope must return a string, got ${who === null ? "null" : typeof who}`);
      }
      const fingerprint = sha256Hex(canonicalize([name, args ?? null]));
      const recordKey = scopedKey(StorePrefix.mcp, who, key);
      const report = (phase: McpErrorEvent["phase"], error: unknown) =>
        onError({ error, phase, tool: name, scope: who, key });
      let claim: Claim;
      try {
        // Step "claim" (docs/claim-protocol.md); the claim layer renews the lease while the tool runs.
        claim = await claimKey({
          store,
          key: recordKey,
          fingerprint,
          leaseMs,
          ttlMs: retentionMs,
          data: JSON.stringify({ scope: who, key, tool: name }),
          onRenewError: (error) => report("renew", error),
          // Told by the claim layer as a renewal finds the key taken over, as the owner engine is: reading
          // `hold.lost` after the tool instead made an AbortController per call, and reported the loss late.
          onLost: () => report("renew", new LeaseLostError(key)),
        });
      } catch (error) {
        report("claim", error);
        return refuse(
          Refusal.unavailable,
          "The server could not check this call's idempotency key, so it did not run the tool. Retry it later.",
        );
      }
      if (claim.status === "exists") {
        const { record } = claim;
        if (record.fingerprint !== fingerprint) {
          return refuse(
            Refusal.keyReused,
            "This idempotency key was already used for another tool or other arguments. Retry the original " +
              "call unchanged, or send this one with a new key.",
          );
        }
        if (record.state === "outcome_unknown") return refuse(Refusal.outcomeUnknown, UNKNOWN);
        if (record.state !== "completed" || record.result === null) {
          return refuse(
            Refusal.keyInFlight,
            "A call with this idempotency key is still running. Retry it later to get its result.",
          );
        }
        const saved = JSON.parse(record.result) as Result<R>;
        return { ...saved, _meta: { ...saved._meta, [REPLAYED_META]: true } };
      }
      const { hold } = claim;
      if (claim.previous !== undefined && !rerunAfterTakeover) {
        // The call that held the key may have run: record its outcome as unknown (step "mark unknown").
        try {
          await hold.write({ state: "outcome_unknown", token: null, leaseMs: null, ttlMs: retentionMs });
        } catch (error) {
          report("claim", error);
        } finally {
          hold.stop();
        }
        return refuse(Refusal.outcomeUnknown, UNKNOWN);
      }

      let result: Result<R>;
      try {
        result = await handler(args, extra);
      } catch (error) {
        if (hadNoEffect(error)) {
          await release(hold, report);
          return noEffectResult(error) as Result<R>;
        }
        // The SDK would answer a throw with an error result that cannot say whether the tool acted before it threw
        // (an email sent, then a connection reset): the server knows the outcome is unknown, so it says so now, and
        // a retry is refused, never run again (step "mark unknown").
        await markUnknown(hold, report);
        return refuse(
          Refusal.outcomeUnknown,
          `${THREW} ${describeThrown(error).replace(/\.$/, "")}. ${UNKNOWN_NEXT}`,
        );
      }
      let text: string | undefined;
      try {
        // Stripe's rule: whatever the handler answered, error results included, is the answer a retry gets.
        text = (save(result) ?? true) ? JSON.stringify(result) : undefined;
      } catch (error) {
        report("save", error);
      }
      if (text === undefined) {
        await release(hold, report);
        return result;
      }
      try {
        // The save-retry rule: retried with backoff under a renewed lease.
        await hold.save({ state: "completed", token: null, leaseMs: null, result: text, ttlMs: retentionMs });
      } catch (error) {
        // The tool ran: its result goes to the client; the key stays locked, so a retry is refused, never rerun.
        report("save", error);
      }
      return result;
    };
  };

  async function markUnknown(hold: Hold, report: (phase: "claim", error: unknown) => void): Promise<void> {
    try {
      // The write that must happen: left pending, the key would lapse and a retry take it over (refused as well,
      // unless rerunAfterTakeover, which would run a call that may have acted).
      await hold.save({ state: "outcome_unknown", token: null, leaseMs: null, ttlMs: retentionMs });
    } catch (error) {
      report("claim", error);
    }
  }

  async function release(hold: Hold, report: (phase: "release", error: unknown) => void): Promise<void> {
    try {
      await hold.release();
    } catch (error) {
      // The key stays claimed until its lease runs out; then a retry takes it over.
      report("release", error);
    }
  }
}

const UNKNOWN_NEXT =
  "It may or may not have taken effect, so it is not run again. Check whether it took effect before calling again " +
  "with a new key.";
const UNKNOWN = `An earlier call with this idempotency key failed or was interrupted while it ran. ${UNKNOWN_NEXT}`;
const THREW = "The tool failed while it ran:";

/** The answer to a handler that threw with `noEffect: true`: its message, marked so that the client frees the key. */
function noEffectResult(error: unknown): McpCallToolResult {
  const text = error instanceof Error ? error.message : String(error);
  return { content: [{ type: "text", text }], isError: true, _meta: { [NO_EFFECT_META]: true } };
}

function refusalResult(refusal: Refusal, text: string): McpCallToolResult {
  return { content: [{ type: "text", text }], isError: true, _meta: { [REFUSAL_META]: refusal } };
}
