import { claimKey } from "../claim/claim.js";
import type { Claim, ClaimSpec } from "../claim/types.js";
import { LeaseLostError } from "../errors/lease-lost-error.js";
import { OutcomeUnknownError } from "../errors/outcome-unknown-error.js";
import { type PurgeOptions, purgeExpired } from "../store/purge.js";
import { StorePrefix, scopedKey } from "../store/scoped-key.js";
import type { StoreRecord } from "../store/types.js";
import { type RequestBody, requestFingerprint } from "./fingerprint.js";
import { KEY_HEADER_RULE, parseKeyHeader } from "./key-header.js";
import { type Lock, startLock } from "./lock.js";
import { lookupAnswer, lookupResponse } from "./lookup.js";
import { type IdempotencyOptions, type ResolvedOptions, resolveOptions } from "./options.js";
import { type OwnerResponse, ProblemType, SHOULD_RETRY } from "./problem.js";
import { decodeSaved } from "./saved-response.js";
import { markUnknown, outcomeUnknown } from "./unknown.js";

/** One request as an adapter describes it to the engine. */
export interface EngineRequest<Req> {
  readonly method: string;
  /** The path and query string, as the client sent them. */
  readonly target: string;
  /** The `Idempotency-Key` field values, one per field line (or joined by a comma, as Fetch `Headers` join them). */
  readonly keyFields: readonly string[] | undefined;
  readonly contentType: string | undefined;
  /** The `Content-Length` field, when the client sent one: a body declared longer than the limit is not read. */
  readonly contentLength?: string | undefined;
  /**
   * Read only for a covered request with a key. An adapter reads at most `limit` bytes and answers
   * `{ tooLarge: true }` past it, so that a huge body costs no memory.
   */
  readonly body: (limit: number) => RequestBody | Promise<RequestBody>;
  /** The framework's request, passed to `scope`. */
  readonly request: Req;
}

export type Decision =
  /** Not covered (another method, or no key where none is required): run the handler as if there were no middleware. */
  | { readonly action: "pass" }
  /** Answer with this and do not run the handler: a problem, or a saved response (`replayed`). */
  | { readonly action: "respond"; readonly response: OwnerResponse; readonly replayed: boolean }
  /** This request holds the key: run the handler, then `lock.finish` with its response. */
  | { readonly action: "run"; readonly lock: Lock };

export type { PurgeOptions };

/** What `screen` needs: the parts of a request known before its body is read. */
export type RequestHead = Pick<EngineRequest<unknown>, "method" | "keyFields" | "contentLength">;

export interface IdempotencyEngine<Req> {
  /** Decides what to do with a request; throws only what `scope` or reading the body threw. */
  begin(request: EngineRequest<Req>): Promise<Decision>;
  /**
   * The checks `begin` makes before it reads the body (method, key, declared length), for an adapter that can
   * answer before its framework parses the body: a decision, or `undefined` when the request goes on to `begin`.
   */
  screen(request: RequestHead): Decision | undefined;
  /** The `maxBodyBytes` option, for adapters that count the body as their framework reads it. */
  readonly maxBodyBytes: number;
  /** The 413 problem `begin` answers past `maxBodyBytes`, for an adapter whose framework refused the body first. */
  tooLarge(): OwnerResponse;
  /**
   * Removes every expired record from the store, `batchSize` at a time, and returns how many. Run it from a timer
   * or a cron job; expired records are ignored anyway, this only reclaims their space. It purges the whole store,
   * harness records included, which is safe: only expired records go.
   */
  purge(options?: PurgeOptions): Promise<number>;
}

const PASS: Decision = { action: "pass" };

/**
 * The framework-agnostic Idempotency-Key engine behind `idemkey/hono`, `idemkey/express` and `idemkey/fastify`,
 * for writing an adapter for another framework. Options are those of `idempotency()`.
 */
export function idempotencyEngine<Req>(options: IdempotencyOptions<Req>): IdempotencyEngine<Req> {
  const resolved = resolveOptions(options);
  const engine: Engine<Req> = {
    options: resolved,
    retryAfter: ["retry-after", String(resolved.retryAfterSeconds)],
  };
  return {
    maxBodyBytes: resolved.maxBodyBytes,
    tooLarge: () => tooLargeProblem(engine),
    screen(request) {
      const screened = screen(engine, request);
      return "key" in screened ? undefined : screened;
    },
    begin: (request) => begin(engine, request),
    purge: (options) => purgeExpired(resolved.store, options),
  };
}

/** What every step of one engine reads: its options, resolved once. */
interface Engine<Req> {
  readonly options: ResolvedOptions<Req>;
  readonly retryAfter: [string, string];
}

/** One request past its checks, as the steps after them see it. */
interface Screened {
  readonly method: string;
  readonly target: string;
  readonly scope: string;
  readonly key: string;
  readonly fingerprint: string;
}

/** Step "begin": the checks (method, key, body), then the claim of the key. */
async function begin<Req>(engine: Engine<Req>, request: EngineRequest<Req>): Promise<Decision> {
  const { options } = engine;
  const method = request.method.toUpperCase();
  if (options.lookup !== undefined && method === "GET" && pathOf(request.target) === options.lookup) {
    return lookup(engine, request);
  }
  const screened = screen(engine, request);
  if (!("key" in screened)) return screened;
  const { key } = screened;
  const scope = checkScope(await options.scope(request.request));
  const body = await request.body(options.maxBodyBytes);
  if ("tooLarge" in body) return respond(tooLargeProblem(engine));
  const fingerprinted = requestFingerprint(method, request.target, request.contentType, body);
  if ("refused" in fingerprinted) {
    const { refused, path } = fingerprinted.refused;
    return respond(
      options.problem(
        ProblemType.bodyInvalid,
        `The JSON body cannot be told apart from another request: ${refused}` +
          `${path === "" ? "" : ` (at ${path})`}. It was not processed and the key was not used; send it ` +
          "as JSON with one value per member name.",
      ),
    );
  }
  const screenedRequest: Screened = {
    method,
    target: request.target,
    scope,
    key,
    fingerprint: fingerprinted.fingerprint,
  };
  // Step "claim" (docs/claim-protocol.md), awaited here rather than in a function of its own: one async frame and
  // its promise fewer per request.
  let claimed: Claim;
  try {
    claimed = await claimKey(claimSpec(options, screenedRequest));
  } catch (error) {
    report(options, "claim", error, scope, key);
    return unavailable(engine);
  }
  return claimedOrNot(engine, screenedRequest, claimed);
}

/** The checks made before the body is read: a decision, or the key when the request goes on. */
function screen<Req>(engine: Engine<Req>, request: RequestHead): Decision | { key: string } {
  const { methods, required, problem, maxBodyBytes } = engine.options;
  const method = request.method.toUpperCase();
  if (!methods.has(method)) return PASS;
  const header = parseKeyHeader(request.keyFields);
  if (!header.ok) {
    if (header.reason === "missing") {
      if (!required) return PASS;
      return respond(
        problem(
          ProblemType.keyMissing,
          "This request needs an Idempotency-Key header: send a unique value (such as a UUID) for each " +
            "operation, and the same value when you retry it.",
        ),
      );
    }
    return respond(problem(ProblemType.keyInvalid, `${header.detail} ${KEY_HEADER_RULE}`));
  }
  const length = request.contentLength === undefined ? Number.NaN : Number(request.contentLength);
  if (length > maxBodyBytes) return respond(tooLargeProblem(engine));
  return { key: header.key };
}

/** What the claim asks the store for; the lease is renewed by the claim layer while the handler runs. */
function claimSpec<Req>(options: ResolvedOptions<Req>, request: Screened): ClaimSpec {
  const { scope, key } = request;
  return {
    store: options.store,
    key: storeKey(scope, key),
    fingerprint: request.fingerprint,
    leaseMs: options.leaseMs,
    ttlMs: options.retentionMs,
    data: JSON.stringify({ scope, key, method: request.method, target: request.target }),
    saveBudgetMs: options.saveRetryMs,
    onRenewError: (error) => report(options, "renew", error, scope, key),
    onLost: () => report(options, "renew", new LeaseLostError(key), scope, key),
  };
}

/** The claim's answer: the key is this request's to run, taken over from a request that may have run, or not ours. */
function claimedOrNot<Req>(
  engine: Engine<Req>,
  request: Screened,
  claimed: Claim,
): Decision | Promise<Decision> {
  const { options } = engine;
  const { scope, key } = request;
  if (claimed.status === "held" && claimed.previous !== undefined && !options.rerunAfterTakeover) {
    // A takeover: the handler of the request that held the key may have run. Unless the application opted in
    // to running it again, the key is recorded as outcome unknown (step "mark unknown") and never runs twice.
    return takenOver(options, claimed.hold, claimed.previous, scope, key);
  }
  if (claimed.status === "held") {
    return { action: "run", lock: startLock(options as ResolvedOptions<never>, claimed.hold, scope, key) };
  }
  return answerExisting(engine, request, claimed.record);
}

/** The key is someone else's: another request's (422), unknown, in flight, or completed (step "replay"). */
function answerExisting<Req>(engine: Engine<Req>, request: Screened, record: StoreRecord): Decision {
  const { problem } = engine.options;
  if (record.fingerprint !== request.fingerprint) {
    return respond(
      problem(
        ProblemType.keyReused,
        "This Idempotency-Key was already used for a different request (another method, path or body). " +
          "Retry the original request unchanged, or send this one with a new key.",
      ),
    );
  }
  if (record.state === "outcome_unknown") return respond(outcomeUnknown(problem));
  if (record.state !== "completed") {
    return respond(
      problem(
        ProblemType.keyInFlight,
        "A request with this Idempotency-Key is still being processed. Retry the same request with the same " +
          "key after the Retry-After delay to get its result.",
        [engine.retryAfter],
      ),
    );
  }
  return replay(engine, request, record);
}

/** Step "replay": the saved response, marked replayed and final. */
function replay<Req>(engine: Engine<Req>, request: Screened, record: StoreRecord): Decision {
  const { problem } = engine.options;
  let saved: ReturnType<typeof decodeSaved>;
  try {
    saved = decodeSaved(record.result);
  } catch (error) {
    report(engine.options, "claim", error, request.scope, request.key);
    return unavailable(engine);
  }
  const response = saved.saved
    ? saved.response
    : problem(
        ProblemType.responseNotSaved,
        `The request with this Idempotency-Key was processed (status ${saved.status}), but its response was ` +
          "too large to be saved, so it cannot be replayed. Do not send it again: look up its result instead.",
      );
  return {
    action: "respond",
    replayed: true,
    // A replay is final: the same answer comes back however often it is asked for.
    response: {
      ...response,
      headers: [
        ...response.headers.filter(([name]) => name !== SHOULD_RETRY),
        ["idempotent-replayed", "true"],
        [SHOULD_RETRY, "false"],
      ],
    },
  };
}

/** The `scope` hook's answer, checked (a synchronous check: an async one would cost a promise per request). */
function checkScope(scope: unknown): string {
  if (typeof scope !== "string") {
    throw new TypeError(`options.scope must return a string, got ${scope === null ? "null" : typeof scope}`);
  }
  return scope;
}

function report<Req>(
  options: ResolvedOptions<Req>,
  phase: "claim" | "renew",
  error: unknown,
  scope: string,
  key: string,
): void {
  try {
    options.onError({ error, phase, scope, key });
  } catch {
    // The client gets its answer whatever the hook does.
  }
}

/** A key lookup (option `lookup`): what this server knows of the key, in the caller's own scope only. */
async function lookup<Req>(engine: Engine<Req>, request: EngineRequest<Req>): Promise<Decision> {
  const { options } = engine;
  const { problem } = options;
  const header = parseKeyHeader(request.keyFields);
  if (!header.ok) {
    return respond(
      header.reason === "missing"
        ? problem(
            ProblemType.keyMissing,
            "A key lookup needs the Idempotency-Key header: send the key whose outcome you want to know.",
          )
        : problem(ProblemType.keyInvalid, `${header.detail} ${KEY_HEADER_RULE}`),
    );
  }
  const scope = checkScope(await options.scope(request.request));
  let answer: ReturnType<typeof lookupAnswer>;
  try {
    answer = lookupAnswer(header.key, await options.store.get(storeKey(scope, header.key)), Date.now());
  } catch (error) {
    report(options, "claim", error, scope, header.key);
    return unavailable(engine);
  }
  return respond(lookupResponse(answer));
}

async function takenOver<Req>(
  options: ResolvedOptions<Req>,
  hold: Extract<Claim, { status: "held" }>["hold"],
  previous: StoreRecord,
  scope: string,
  key: string,
): Promise<Decision> {
  try {
    await markUnknown(hold, options.retentionMs, previous);
  } catch (error) {
    report(options, "claim", error, scope, key);
  }
  report(options, "claim", new OutcomeUnknownError({ key, by: "takeover" }), scope, key);
  return respond(outcomeUnknown(options.problem));
}

function tooLargeProblem<Req>(engine: Engine<Req>): OwnerResponse {
  const { problem, maxBodyBytes } = engine.options;
  return problem(
    ProblemType.bodyTooLarge,
    `The request body is longer than the ${maxBodyBytes} bytes this server reads for a request with an ` +
      "Idempotency-Key; it was not processed and the key was not used. Send a smaller body.",
  );
}

function unavailable<Req>(engine: Engine<Req>): Decision {
  return respond(
    engine.options.problem(
      ProblemType.storeUnavailable,
      "The server could not check this Idempotency-Key, so it did not process the request. Retry with the same " +
        "key after the Retry-After delay.",
      [engine.retryAfter],
    ),
  );
}

/** The middleware's store key of (scope, key): `scopedKey` under the `http:` namespace. */
export function storeKey(scope: string, key: string): string {
  return scopedKey(StorePrefix.http, scope, key);
}

/** The path of a request target, without its query. */
function pathOf(target: string): string {
  const query = target.indexOf("?");
  return query === -1 ? target : target.slice(0, query);
}

function respond(response: OwnerResponse): Decision {
  return { action: "respond", response, replayed: false };
}
