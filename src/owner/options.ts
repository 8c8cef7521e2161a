import { describe, describeThrown } from "../options/describe.js";
import { numberOption } from "../options/number-option.js";
import { reporter } from "../options/report.js";
import { isToken } from "../options/token.js";
import type { Store } from "../store/types.js";
import { type Problem, problems } from "./problem.js";

/** What the handler produced, as the `save` hook sees it. */
export interface SaveOutcome {
  /** The response status. */
  readonly status: number;
  /** Whether the handler threw (Hono and Fastify report this; Express cannot tell a thrown error from a response). */
  readonly threw: boolean;
  /** What the handler threw, where the framework reports it (Hono, Fastify); otherwise `undefined`. */
  readonly error?: unknown;
  /**
   * Whether the handler said that nothing happened: it called `markNoEffect`, or threw an error with
   * `noEffect: true`. The middleware always sets it.
   */
  readonly noEffect?: boolean;
}

/** What becomes of a key once its handler is done. */
export const Settle = {
  /** Completed: the response is saved and replayed to every retry. */
  save: "save",
  /** Deleted: a retry runs the handler again. */
  release: "release",
  /** Recorded `outcome_unknown`: every retry is answered `409` with the problem `outcome-unknown`. */
  unknown: "unknown",
} as const;
export type Settle = (typeof Settle)[keyof typeof Settle];

/** Something went wrong that the client cannot be told about: the response was already decided. */
export interface IdempotencyErrorEvent {
  readonly error: unknown;
  /** Where it happened: taking the key, renewing its lease, saving the response, or releasing the key. */
  readonly phase: "claim" | "renew" | "save" | "release";
  readonly scope: string;
  readonly key: string;
}

/**
 * The options of `idempotency()` from `idemkey/hono`, `idemkey/express` and `idemkey/fastify`: the same for all
 * three. `Req` is the framework's request: Hono's `Context`, Express's `Request`, Fastify's `FastifyRequest`.
 *
 * @example
 * app.use("/v1/*", idempotency({ store: sqliteStore("idem.db"), scope: (c) => c.get("accountId") }));
 */
export interface IdempotencyOptions<Req> {
  /**
   * Where the keys and saved responses live: any idemkey store (memory, SQLite, PostgreSQL, Redis). Records go
   * under the `http:` prefix, so the harness can share the store. Use a store every instance of the service
   * reaches (not `memoryStore()` when there are several processes), or two instances can run the same key.
   */
  store: Store;
  /**
   * Names the caller, so that keys are per caller: the record's identity is (scope, key), and one caller can never
   * see, replay or block another's response (the IETF draft's security section: combine the key with the client's
   * identity). Return the authenticated account, tenant or API client id, never something the client can choose
   * freely. It may be async; a throw goes to the framework's error handling.
   *
   * There is no default: a service with more than one caller that forgot it would hand one caller's saved response
   * (an address, a card's last digits) to any other that sends the same key. A service with one caller, or whose
   * callers all trust one another, says so with `"single-tenant"`: one global scope.
   * @example scope: (c) => c.get("accountId")
   * @example scope: "single-tenant"
   */
  scope: ((request: Req) => string | Promise<string>) | typeof SINGLE_TENANT;
  /**
   * The request methods that take a key. Others pass through untouched.
   * @default ["POST", "PATCH"]
   */
  methods?: readonly string[];
  /**
   * Whether a covered request without an `Idempotency-Key` is refused with 400. When `false` it passes through
   * untouched, without any protection. A malformed key is refused either way.
   * @default true
   */
  required?: boolean;
  /**
   * How long a running request holds its key, in milliseconds. The lease is renewed every third of it while the
   * handler runs, so it only matters when the process dies: the key is then blocked (409) for at most this long,
   * after which a retry takes it over and runs the handler again. Keep it well above a store round trip.
   * @default 30_000
   */
  leaseMs?: number;
  /**
   * How long a saved response is kept and replayed, in milliseconds, from when it was saved. After it the key is
   * free again: the same request runs the handler again. Purge expired records with `purge({ batchSize })`.
   * @default 86_400_000 (24 hours)
   */
  retentionMs?: number;
  /**
   * The largest response body that is saved, in bytes. A larger one is sent to its client, but not saved: the key is
   * marked done without a response, later retries get a 500 problem saying so, and `onError` receives a
   * `ResponseTooLargeError`. Nothing is ever half-saved.
   * @default 1_048_576 (1 MiB)
   */
  maxResponseBytes?: number;
  /**
   * The longest request body read to fingerprint a keyed request, in bytes. A longer one (by `Content-Length`, or
   * counted as it arrives) is answered 413 before the handler runs and before the key is claimed, so the client may
   * retry it, shorter, with the same key. The adapter stops copying at the limit, so memory stays bounded whatever
   * is sent. Fastify applies its own `bodyLimit` (also 1 MiB by default) to the bodies it parses.
   * @default 1_048_576 (1 MiB)
   */
  maxBodyBytes?: number;
  /**
   * The start of the `type` URI of the middleware's problem responses, to point clients at the service's own error
   * docs: `type` is this followed by the problem's name (`key-missing`, `key-reused`, ...; see `ProblemType`).
   * @default "https://idemkey.dev/problems/"
   * @example problemTypeBase: "https://api.example.com/docs/errors/"
   */
  problemTypeBase?: string;
  /**
   * The service's documentation of its Idempotency-Key rules; when set, every problem response links to it with
   * `Link: <docsUrl>; rel="describedby"`, as the IETF draft suggests for a missing key.
   * @example docsUrl: "https://api.example.com/docs/idempotency"
   */
  docsUrl?: string;
  /**
   * Response headers saved and replayed besides `content-type`, `content-language`, `content-disposition`,
   * `content-location` and `location`, which always are. Names are case-insensitive.
   * @default []
   * @example keepHeaders: ["x-request-cost", "link"]
   */
  keepHeaders?: readonly string[];
  /**
   * Decides what becomes of the key once the handler is done: `true` saves the response (and replays it to every
   * retry), `false` releases the key so that a retry runs the handler again, `undefined` keeps the default.
   *
   * The default follows one rule: an error means "nothing happened" only when the handler says so. Whatever the
   * handler answers, 4xx and 5xx included, is saved and replayed, as Stripe does. A handler that throws is not run
   * again: its key is recorded as outcome unknown, and retries get `409` with the problem `outcome-unknown`. The key
   * is released only when the handler says it did nothing, with `markNoEffect`, or by throwing an error with
   * `noEffect: true` (seen by Hono and Fastify; an Express error handler calls `markNoEffect(res)` for it). A hook
   * that throws is reported to `onError` (phase `save`) and the default applies. Earlier versions released the key
   * on any throw or 5xx; `({ status, threw }) => status < 500 && !threw` restores that, at the price of running
   * again a handler that failed after its effect.
   * @default an answer is saved, a throw is recorded outcome unknown, a handler's "no effect" releases the key
   * @example save: ({ status }) => (status === 503 ? false : undefined)
   */
  save?: (outcome: SaveOutcome) => boolean | undefined;
  /**
   * What a retry does when it takes over a key whose lease ran out (the process running its handler died, or lost
   * the store for longer than the lease and the save budget). The handler may have run and taken effect, so by
   * default the retry is answered `409` with the problem `outcome-unknown`, the key is recorded as such, and every
   * later retry gets the same answer until the record expires (`retentionMs`) or an operator deletes it: nothing runs
   * twice. `true` runs the handler again instead, for handlers whose effects are themselves idempotent.
   * @default false
   */
  rerunAfterTakeover?: boolean;
  /**
   * How long, in milliseconds, the save of a response is retried while the store fails, with backoff and with the
   * lease kept alive, before the middleware gives up (leaving the key locked, so that a retry is answered
   * `outcome-unknown` rather than run again) and tells `onError` (phase `save`).
   * @default 2 × leaseMs
   */
  saveRetryMs?: number;
  /**
   * The `Retry-After` (seconds) sent with 409 (key in flight) and 503 (store unavailable).
   * @default 1
   */
  retryAfterSeconds?: number;
  /**
   * Opts in to key lookups at this path: a `GET` of it with an `Idempotency-Key` header is answered, without running
   * anything, with what this server knows of that key **for the calling scope**: `completed` (with the saved
   * response's status and body), `in_flight`, `outcome_unknown` (it cannot tell either), or `unknown` (it never saw
   * the key). Another caller's key is `unknown`, the same answer as a key nobody sent: a lookup learns nothing across
   * scopes. The path must be one the middleware sees (under its mount). What `lookupReconcile` of `idemkey/fetch`
   * asks. Not every framework runs middleware for a path no route matches: with Fastify, declare the route.
   * @default none: no lookup
   * @example lookup: "/v1/idempotency-keys"
   */
  lookup?: string;
  /**
   * Told about failures that happen once the answer is decided: a store error (the client got a 503, or its
   * response was sent but not saved), a lease lost to another request, a response too large to save. As in every
   * idemkey module (see `options/report.ts`), a hook that throws, or no hook, gives an `IdemkeyWarning` instead.
   * @default a process warning of type `IdemkeyWarning`
   */
  onError?: (event: IdempotencyErrorEvent) => void;
}

/** The `scope` of a service with one caller, or whose callers all trust one another: one global scope. */
export const SINGLE_TENANT = "single-tenant";

export interface ResolvedOptions<Req> {
  readonly store: Store;
  readonly scope: (request: Req) => string | Promise<string>;
  readonly methods: ReadonlySet<string>;
  readonly required: boolean;
  readonly leaseMs: number;
  readonly retentionMs: number;
  readonly maxResponseBytes: number;
  readonly maxBodyBytes: number;
  readonly problem: Problem;
  readonly keepHeaders: ReadonlySet<string>;
  /** The `save` hook, or one that keeps the default; see `settle`. */
  readonly save: (outcome: SaveOutcome) => boolean | undefined;
  readonly retryAfterSeconds: number;
  readonly rerunAfterTakeover: boolean;
  readonly saveRetryMs: number;
  readonly onError: (event: IdempotencyErrorEvent) => void;
  readonly lookup: string | undefined;
}

export const DEFAULT_METHODS = ["POST", "PATCH"] as const;
export const DEFAULT_LEASE_MS = 30_000;
export const DEFAULT_RETENTION_MS = 24 * 60 * 60 * 1000;
export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
export const ALWAYS_KEPT_HEADERS = [
  "content-type",
  "content-language",
  "content-disposition",
  "content-location",
  "location",
] as const;

const STORE_METHODS = ["claim", "update", "delete", "purge"] as const;

/**
 * What becomes of the key: what the `save` hook said, or without an answer the rule of
 * docs/integration-contract.md for owners, where only the handler can say that nothing happened.
 */
export function settle(said: boolean | undefined, { threw, noEffect }: SaveOutcome): Settle {
  if (said !== undefined && said !== null) return said ? Settle.save : Settle.release;
  return noEffect ? Settle.release : threw ? Settle.unknown : Settle.save;
}

const keepDefault = () => undefined;

/** Validates and copies the options once, at factory time; the caller's object is never written to. */
export function resolveOptions<Req>(options: IdempotencyOptions<Req>): ResolvedOptions<Req> {
  if (typeof options !== "object" || options === null) {
    throw new TypeError("idempotency(options) needs an options object with at least `store`");
  }
  const { store, scope, methods, required, leaseMs, retentionMs, maxResponseBytes, keepHeaders, save } =
    options;
  const { retryAfterSeconds, onError, rerunAfterTakeover, saveRetryMs } = options;
  const { maxBodyBytes, problemTypeBase, docsUrl, lookup } = options;

  if (
    typeof store !== "object" ||
    store === null ||
    STORE_METHODS.some((m) => typeof store[m] !== "function")
  ) {
    throw new TypeError(
      "options.store must be an idemkey Store (memoryStore(), sqliteStore(), ...) with claim, update, delete and purge",
    );
  }
  if (scope === undefined) {
    throw new TypeError(
      "options.scope is required: a function naming the authenticated caller, (request) => accountId, so that " +
        'callers cannot replay or block one another\'s keys; or "single-tenant" for one global scope',
    );
  }
  if (typeof scope !== "function" && scope !== SINGLE_TENANT) {
    throw new TypeError(
      `options.scope must be a function (request) => string or "single-tenant", got ${describe(scope)}`,
    );
  }
  if (required !== undefined && typeof required !== "boolean") {
    throw new TypeError(`options.required must be a boolean, got ${typeof required}`);
  }
  if (save !== undefined && typeof save !== "function") {
    throw new TypeError(`options.save must be a function, got ${typeof save}`);
  }
  if (onError !== undefined && typeof onError !== "function") {
    throw new TypeError(`options.onError must be a function, got ${typeof onError}`);
  }
  if (rerunAfterTakeover !== undefined && typeof rerunAfterTakeover !== "boolean") {
    throw new TypeError(`options.rerunAfterTakeover must be a boolean, got ${typeof rerunAfterTakeover}`);
  }
  if (lookup !== undefined) {
    if (typeof lookup !== "string" || !lookup.startsWith("/") || /[?#\s]/.test(lookup)) {
      throw new TypeError(
        `options.lookup must be a path such as "/v1/idempotency-keys" (no query), got ${describe(lookup)}`,
      );
    }
    if (typeof store.get !== "function") {
      throw new TypeError("options.lookup needs a store with get, to read the key's record");
    }
  }
  const lease = positiveInteger("leaseMs", leaseMs, DEFAULT_LEASE_MS);

  return {
    store,
    scope: scope === SINGLE_TENANT ? () => "" : scope,
    methods: new Set(nameList("methods", methods ?? DEFAULT_METHODS, true).map((m) => m.toUpperCase())),
    required: required ?? true,
    leaseMs: lease,
    retentionMs: positiveInteger("retentionMs", retentionMs, DEFAULT_RETENTION_MS),
    maxResponseBytes: positiveInteger("maxResponseBytes", maxResponseBytes, DEFAULT_MAX_RESPONSE_BYTES),
    maxBodyBytes: positiveInteger("maxBodyBytes", maxBodyBytes, DEFAULT_MAX_BODY_BYTES),
    problem: problems(absoluteUrl("problemTypeBase", problemTypeBase), absoluteUrl("docsUrl", docsUrl)),
    keepHeaders: new Set([
      ...ALWAYS_KEPT_HEADERS,
      ...nameList("keepHeaders", keepHeaders ?? [], false).map((h) => h.toLowerCase()),
    ]),
    save: save ?? keepDefault,
    retryAfterSeconds: positiveInteger("retryAfterSeconds", retryAfterSeconds, 1),
    rerunAfterTakeover: rerunAfterTakeover ?? false,
    saveRetryMs: positiveInteger("saveRetryMs", saveRetryMs, 2 * lease),
    onError: reporter(onError, "onError", errorText),
    lookup,
  };
}

/** A URI for a problem's `type` or a `Link`: absolute, and with nothing that would break the header. */
function absoluteUrl(name: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || !URL.canParse(value) || /[\s<>"]/.test(value)) {
    throw new TypeError(
      `options.${name} must be an absolute URL such as "https://example.com/docs/", got ${describe(value)}`,
    );
  }
  return value;
}

// Whole milliseconds, bytes and seconds: they go into headers and SQL as integers.
const positiveInteger = (name: string, value: unknown, fallback: number) =>
  numberOption(`options.${name}`, value, fallback, { integer: true, min: 1 });

function nameList(name: string, value: unknown, nonEmpty: boolean): string[] {
  if (!Array.isArray(value) || (nonEmpty && value.length === 0)) {
    throw new TypeError(`options.${name} must be ${nonEmpty ? "a non-empty" : "an"} array of names`);
  }
  return value.map((item, i) => {
    if (!isToken(item)) {
      throw new TypeError(
        `options.${name}[${i}] must be an HTTP token such as "POST", got ${JSON.stringify(item)}`,
      );
    }
    return item;
  });
}

function errorText({ error, phase, scope, key }: IdempotencyErrorEvent): string {
  return `${phase} failed for Idempotency-Key ${JSON.stringify(key)} (scope ${JSON.stringify(scope)}): ${describeThrown(error)}`;
}
