import { randomBytes } from "node:crypto";
import { userInfo } from "node:os";
import type { HarnessOptions } from "../harness/options.js";
import { numberOption } from "../options/number-option.js";
import { renamedOption } from "../options/renamed.js";
import type { Store } from "../store/types.js";
import { randomSecret } from "./keyed-id.js";
import { DEFAULT_REDACT } from "./redact.js";

export interface InspectorOptions {
  /** The store holding the ledger, as the harness uses it (records under `call:<key>`). Required. */
  store: Store;
  /**
   * The secret every action (approve, deny, resolve) must carry in the `x-idemkey-token` header; with `remote`,
   * every API request. At least 16 characters.
   * @default 24 random bytes, base64url
   */
  token?: string;
  /**
   * The key of the short ids the inspector derives from what it does not show: a masked scope's `scopeId`, the `id`
   * of an owner's key whose scope is masked, and a claim's `holder`, each an HMAC-SHA-256 under this secret, so that
   * nobody can confirm a guess by hashing it. The ids stay the same while the inspector runs; give the same secret
   * to two inspectors (or to a restart, or to `idemkey inspect --list --secret`) for ids that agree between them.
   * At least 16 characters; keep it as secret as the scopes it hides.
   * @default 32 random bytes, new for each inspector: its ids change when it restarts
   */
  secret?: string;
  /** Shows the ledger without the actions: the page hides them and their endpoints answer 403. @default false */
  readOnly?: boolean;
  /**
   * Object members masked (as `"[redacted]"`) in the arguments and results the inspector shows, at any depth: a
   * member is masked when its name contains one of these, case-insensitively and ignoring `_` and `-`. `[]` masks
   * nothing.
   * @default ["token", "password", "secret", "apiKey", "authorization", "cookie", "cardNumber", "card_number", "cvc", "cvv"]
   */
  redact?: readonly string[];
  /**
   * Who an action is recorded as done by (`by` in the audit trail) when the page sends no name.
   * @default the operating system's user name
   */
  user?: string;
  /**
   * Serves other machines: every API request, reads included, needs the token, and any `Host` header is accepted.
   * Without it only loopback `Host` names are, which stops DNS rebinding from reading the ledger.
   * @default false
   */
  remote?: boolean;
  /**
   * How often, in milliseconds, the ledger is read for the live view while a page is open: the records changed
   * since the last read on a store with `changes` (every built-in store: memory, SQLite, PostgreSQL, Redis),
   * every record on one without it.
   * @default 1000
   */
  pollMs?: number;
  /**
   * The most live streams (`/api/stream`, one per open page) served at once; more are answered 503 with
   * `Retry-After`, so that a burst of them cannot starve the rest of the page.
   * @default 32
   */
  maxStreams?: number;
  /**
   * The most calls read from the ledger; beyond it the inspector shows the first ones in key order and says so.
   * @default 10000
   */
  maxRecords?: number;
  /** How the store is named on the page, such as its URL without the password. @default "the ledger" */
  label?: string;
  /**
   * How long a result recorded through resolve is kept, in milliseconds, as the harness's `retentionMs`: use the value
   * your harness uses.
   * @default 604800000 (7 days)
   */
  retentionMs?: number;
  /** @deprecated The former name of `retentionMs`; either works (both only with one value). */
  ttlMs?: number;
  /** The clock the live view's freshness and "now" are measured with, in epoch ms; for tests. @default Date.now */
  clock?: () => number;
  /**
   * Called with the harness's event for each approval, denial and resolution made on the page, as `createHarness`'s
   * `onEvent` is; `tracedEvents()` from `idemkey/otel` counts the resolutions.
   * @default none
   */
  onEvent?: HarnessOptions["onEvent"];
}

export interface ResolvedInspectorOptions {
  store: Store;
  token: string;
  secret: string;
  readOnly: boolean;
  redact: readonly string[];
  user: string;
  remote: boolean;
  pollMs: number;
  maxStreams: number;
  maxRecords: number;
  label: string;
  retentionMs: number;
  clock: () => number;
  onEvent: HarnessOptions["onEvent"];
}

export function resolveInspectorOptions(options: InspectorOptions): ResolvedInspectorOptions {
  if (typeof options !== "object" || options === null) throw new TypeError("options must be an object");
  const store = options.store as Partial<Store> | undefined;
  for (const method of ["get", "list", "update"] as const) {
    if (typeof store?.[method] !== "function") {
      throw new TypeError(
        `options.store must be a Store (sqliteStore, postgresStore, ...); it has no ${method}()`,
      );
    }
  }
  const token = options.token ?? randomBytes(24).toString("base64url");
  if (typeof token !== "string" || token.length < 16) {
    throw new TypeError("options.token must be a string of at least 16 characters");
  }
  const secret = options.secret ?? randomSecret();
  if (typeof secret !== "string" || secret.length < 16) {
    throw new TypeError("options.secret must be a string of at least 16 characters");
  }
  if (options.clock !== undefined && typeof options.clock !== "function") {
    throw new TypeError("options.clock must be a function");
  }
  const redact = options.redact ?? DEFAULT_REDACT;
  if (!Array.isArray(redact) || redact.some((f) => typeof f !== "string" || f.trim() === "")) {
    throw new TypeError("options.redact must be a list of non-empty field names");
  }
  return {
    store: options.store,
    token,
    secret,
    readOnly: flag("readOnly", options.readOnly),
    redact: [...redact],
    user: name("user", options.user) ?? osUser(),
    remote: flag("remote", options.remote),
    pollMs: integer("pollMs", options.pollMs, 1_000, 50),
    maxStreams: integer("maxStreams", options.maxStreams, 32, 1),
    maxRecords: integer("maxRecords", options.maxRecords, 10_000, 1),
    label: name("label", options.label) ?? "the ledger",
    retentionMs: numberOption(...renamedOption(options, "retentionMs", "ttlMs"), 7 * 24 * 60 * 60 * 1000, {
      integer: true,
      min: 1,
    }),
    clock: options.clock ?? Date.now,
    onEvent: options.onEvent,
  };
}

/** Checks a name a person is recorded under: short, printable. */
export function checkName(what: string, value: unknown): string {
  if (typeof value !== "string" || value.trim() === "" || value.length > 100 || /\p{Cc}/u.test(value)) {
    throw new TypeError(`${what} must be a name of 1 to 100 printable characters`);
  }
  return value.trim();
}

function osUser(): string {
  try {
    return userInfo().username || "unknown";
  } catch {
    // No passwd entry for this uid (a container): fall back to the environment.
    return process.env.USER || process.env.USERNAME || "unknown";
  }
}

function name(option: string, value: unknown): string | undefined {
  return value === undefined ? undefined : checkName(`options.${option}`, value);
}

function flag(option: string, value: unknown): boolean {
  if (value === undefined) return false;
  if (typeof value !== "boolean") throw new TypeError(`options.${option} must be a boolean`);
  return value;
}

const integer = (option: string, value: unknown, fallback: number, min: number) =>
  numberOption(`options.${option}`, value, fallback, { integer: true, min });
