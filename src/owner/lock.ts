import type { Hold } from "../claim/types.js";
import { LeaseLostError } from "../errors/lease-lost-error.js";
import { ResponseTooLargeError } from "../errors/response-too-large-error.js";
import { hadNoEffect } from "../harness/retry.js";
import { lateCompletion } from "./audit.js";
import { type ResolvedOptions, type SaveOutcome, Settle, settle } from "./options.js";
import type { OwnerResponse } from "./problem.js";
import { encodeNotSaved, encodeSaved } from "./saved-response.js";
import { markUnknown } from "./unknown.js";

/** The response a handler produced, as an adapter captured it. */
export interface HandlerResponse {
  readonly status: number;
  /** Every response header; only the kept ones are saved. */
  readonly headers: Iterable<readonly [string, string]>;
  /** The body, or `undefined` when it was larger than `maxResponseBytes` (the adapter stops copying it then). */
  readonly body: Uint8Array | undefined;
  /** Whether the handler threw; the response is then whatever answered the error. */
  readonly threw: boolean;
  /** What the handler threw, where the framework shows it. */
  readonly error?: unknown;
  /** Whether `markNoEffect` was called for this request. */
  readonly noEffect?: boolean;
}

/**
 * The hold one request has on its key while its handler runs (the claim layer's `Hold`). The adapter calls `finish`
 * exactly once, with the response (saved, released or marked unknown per `save`); until then the lease is renewed in
 * the background.
 */
export interface Lock {
  readonly scope: string;
  readonly key: string;
  /** The adapter may stop copying a response body beyond this many bytes. */
  readonly maxResponseBytes: number;
  /** The lowercase names of the response headers that are saved: an adapter may hand over only those. */
  readonly keepHeaders: ReadonlySet<string>;
  /** Saves the response, releases the key or marks it unknown; never throws (failures go to `onError`). */
  finish(response: HandlerResponse): Promise<void>;
}

export function startLock(options: ResolvedOptions<never>, hold: Hold, scope: string, key: string): Lock {
  const { retentionMs, onError } = options;
  let finished = false;

  const report = (phase: "save" | "release", error: unknown) => {
    try {
      onError({ error, phase, scope, key });
    } catch {
      // A failing error hook must not turn a finished request into an unhandled rejection.
    }
  };
  // The claim layer renews the lease; a renewal that finds the key taken over is reported by the engine (the
  // claim's `onLost`), not through a listener on `hold.lost`, which would cost an AbortController per request.

  // A retry that took the key over while the handler ran recorded it unknown under this request's token: the
  // response saved late settles it (unless takers run the handler again, which leaves nothing to settle).
  const late = options.rerunAfterTakeover ? undefined : lateCompletion;
  const complete = (result: string) =>
    // The save-retry rule: retried with backoff under a renewed lease. The response waits for the first try only;
    // later tries go on in the background, so that an outage delays no client beyond one store round trip.
    new Promise<void>((answered) => {
      hold
        .save(
          { state: "completed", token: null, leaseMs: null, result, ttlMs: retentionMs },
          { onRetry: () => answered(), ...(late === undefined ? {} : { late }) },
        )
        .then(
          (saved) => {
            if (!saved && !hold.lost.aborted) report("save", new LeaseLostError(key));
            answered();
          },
          (error: unknown) => {
            // Given up: the key stays locked (pending), so a retry after the lease is answered outcome-unknown.
            report("save", error);
            answered();
          },
        );
    });

  return {
    scope,
    key,
    maxResponseBytes: options.maxResponseBytes,
    keepHeaders: options.keepHeaders,
    async finish(response) {
      if (finished) return;
      finished = true;
      const { status, threw, error, body } = response;
      const outcome: SaveOutcome = {
        status,
        threw,
        error,
        noEffect: response.noEffect === true || (threw && hadNoEffect(error)),
      };
      let said: boolean | undefined;
      try {
        said = options.save(outcome);
      } catch (error) {
        // A failing hook changes nothing: the default decides, as if the hook had returned `undefined`.
        report("save", error);
      }
      const settled = settle(said, outcome);
      if (settled === Settle.release) {
        try {
          await hold.release();
        } catch (error) {
          // The key stays blocked until its lease runs out; then a retry takes it over.
          report("release", error);
        }
        return;
      }
      if (settled === Settle.unknown) {
        try {
          await markUnknown(hold, retentionMs);
        } catch (error) {
          report("save", error);
        }
        return;
      }
      if (body === undefined || body.byteLength > options.maxResponseBytes) {
        // The effect happened: mark the key done rather than release it, so that a retry does not repeat it.
        await complete(encodeNotSaved(status, "too_large"));
        report("save", new ResponseTooLargeError(key, status, options.maxResponseBytes));
        return;
      }
      await complete(encodeSaved(keptResponse(options, status, response.headers, body)));
    },
  };
}

function keptResponse(
  options: ResolvedOptions<never>,
  status: number,
  headers: Iterable<readonly [string, string]>,
  body: Uint8Array,
): OwnerResponse {
  const kept: [string, string][] = [];
  for (const [name, value] of headers) {
    const lower = name.toLowerCase();
    if (options.keepHeaders.has(lower)) kept.push([lower, value]);
  }
  return { status, headers: kept, body };
}
