import { CanonicalizationError } from "../errors/canonicalization-error.js";
import { canonicalizeAt, DEFAULT_MAX_DEPTH } from "../key/canonicalize.js";
import { type CallKeys, callKeys, idempotencyKey, keyHash } from "../key/idempotency-key.js";
import { checkNumber } from "../options/number-option.js";
import { purgeExpired } from "../store/purge.js";
import { ledgerAdmin } from "./admin.js";
import { type Call, type Core, emit, untilAborted } from "./call.js";
import { isTool } from "./define-tool.js";
import { newCall, PREFIX } from "./ledger.js";
import { type HarnessOptions, resolveOptions } from "./options.js";
import { paced } from "./pace.js";
import { runRead } from "./read.js";
import { settle } from "./settle.js";
import { type CallOptions, type CallOutcome, Effect, type Harness, type Tool } from "./types.js";

/**
 * The wrapper an agent harness puts around every tool call: derives the call's idempotency key (the model never
 * supplies it), hands it to the tool, and keeps a durable ledger so that retries, races and replays after a crash
 * take effect once. The ledger is a cache, not the guarantee: where a process dies after the side effect and
 * before the ledger write, the replay runs the tool again with the same key, and only the owner of the effect can
 * dedupe it.
 *
 * @example
 * const harness = createHarness({ store: sqliteStore("./ledger.db") });
 * const pr = await harness.call("task-8812", openPullRequest, { repo: "acme/api", head: "fix-42", title: "Fix" });
 */
// Factories are named for what they make (sqliteStore, idempotencyEngine); `create` only where that bare noun is the
// name a caller gives the result (`const harness = ...`) or an export already holds (the default idempotentFetch).
export function createHarness(options?: HarnessOptions): Harness {
  const core: Core = { ...resolveOptions(options), never: new AbortController().signal };
  /** Calls running in this harness, by key: a second identical call shares the first one's outcome. */
  const running = new Map<string, { promise: Promise<unknown>; signal: AbortSignal | undefined }>();

  function keyOf<A>(taskId: string, tool: Tool<A, unknown>, args: A, step: CallOptions["step"]) {
    const secret = core.keySecret;
    const keyOptions =
      step === undefined && secret === undefined
        ? undefined
        : { ...(step === undefined ? {} : { step }), ...(secret === undefined ? {} : { secret }) };
    if (tool.identity === undefined) return idempotencyKey(taskId, tool.name, args, keyOptions);
    const identity = tool.identity(args);
    try {
      return idempotencyKey(taskId, tool.name, identity, keyOptions);
    } catch (error) {
      if (error instanceof CanonicalizationError && error.path.startsWith("$.args")) {
        const path = `$.identity${error.path.slice("$.args".length)}`;
        throw new CanonicalizationError(
          path,
          `${error.reason} (in what tool.identity of "${tool.name}" returned)`,
          {
            cause: error,
          },
        );
      }
      throw error;
    }
  }

  function identityKeys<A>(
    taskId: string,
    tool: Tool<A, unknown>,
    args: A,
    step: CallOptions["step"],
  ): CallKeys {
    const key = keyOf(taskId, tool, args, step);
    const argsText = canonicalizeAt(args, "$.args", DEFAULT_MAX_DEPTH);
    return { key, argsText, argsHash: keyHash(argsText, core.keySecret) };
  }

  function prepare<A, R>(
    taskId: string,
    tool: Tool<A, R>,
    args: A,
    options: CallOptions | undefined,
  ): Call<A, R> {
    if (!isTool(tool)) throw new TypeError("tool must be a tool made by defineTool()");
    if (options !== undefined && (typeof options !== "object" || options === null)) {
      throw new TypeError("options must be an object");
    }
    const signal = options?.signal;
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      throw new TypeError("options.signal must be an AbortSignal");
    }
    const step = options?.step;
    // Without an identity the key hashes the same canonical arguments the record keeps: one write gives all three.
    // The args hash is under the fleet secret too: it would otherwise give masked arguments away just as well.
    const { key, argsText, argsHash } =
      tool.identity === undefined
        ? callKeys(taskId, tool.name, args, step, DEFAULT_MAX_DEPTH, core.keySecret)
        : identityKeys(taskId, tool, args, step);
    const data = newCall({ taskId, tool: tool.name, effect: tool.effect, step, argsHash, args: argsText });
    return {
      core,
      tool,
      taskId,
      key,
      sk: PREFIX + key,
      args,
      argsHash,
      data,
      signal,
      startedAt: core.clock(),
      replayed: false,
    };
  }

  async function callWithOutcome<A, R>(
    taskId: string,
    tool: Tool<A, R>,
    args: A,
    options?: CallOptions,
  ): Promise<CallOutcome<R>> {
    const c = prepare(taskId, tool, args, options);
    c.signal?.throwIfAborted();
    if (tool.effect === Effect.read) return { value: await paced(runRead(c)), replayed: false };
    const current = running.get(c.key);
    if (current !== undefined) {
      try {
        const value = (await untilAborted(current.promise, c.signal)) as R;
        emit(c, { type: "waited", attempt: 0, on: "in_process" });
        return { value, replayed: true };
      } catch (error) {
        // The shared call was stopped by its own caller's signal, not by ours: run this one on its own.
        if (current.signal?.aborted && error === current.signal.reason && !c.signal?.aborted) {
          return callWithOutcome(taskId, tool, args, options);
        }
        throw error;
      }
    }
    const promise = settle(c).finally(() => {
      if (running.get(c.key)?.promise === promise) running.delete(c.key);
    });
    running.set(c.key, { promise, signal: c.signal });
    const value = await paced(promise);
    // Waiting on the same call pending elsewhere ends in a replay of its record: `replay` marks it.
    return { value, replayed: c.replayed };
  }

  async function call<A, R>(taskId: string, tool: Tool<A, R>, args: A, options?: CallOptions): Promise<R> {
    return (await callWithOutcome(taskId, tool, args, options)).value;
  }

  return {
    call,
    callWithOutcome,
    modelTexts: core.modelTexts,
    key(taskId, tool, args, options) {
      if (!isTool(tool)) throw new TypeError("tool must be a tool made by defineTool()");
      return keyOf(taskId, tool, args, options?.step);
    },
    ...ledgerAdmin(core),
    async purge(options = {}) {
      if (options.limit === undefined) return purgeExpired(core.store, options);
      // The deprecated limit keeps its meaning, one batch, so that a caller's own loop over it still ends.
      if (options.batchSize !== undefined) {
        throw new TypeError(
          "options.limit (one batch, deprecated) and options.batchSize were both given; give only options.batchSize",
        );
      }
      return core.store.purge({
        limit: checkNumber("options.limit", options.limit, { integer: true, min: 1 }),
      });
    },
  };
}
