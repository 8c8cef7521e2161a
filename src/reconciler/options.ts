import { isTool } from "../harness/define-tool.js";
import type { Tool } from "../harness/types.js";
import { describe } from "../options/describe.js";
import { numberOption } from "../options/number-option.js";
import type { Store } from "../store/types.js";
import type { ReconcilerEvent } from "./events.js";

export interface ReconcilerOptions {
  /** The store the harnesses keep their ledger in (the same one, shared by every reconciler of the fleet). */
  store: Store;
  /**
   * The tools whose calls this reconciler may decide, as `defineTool` made them (an array, or an object of them as
   * a module exports them). A record is matched by the tool name it carries; only `unguarded` tools with a
   * `reconcile` are asked, and a record of a tool not given here is left for a person, with the reason recorded.
   */
  tools: readonly Tool<never, unknown>[] | Readonly<Record<string, unknown>>;
  /**
   * Who decides, recorded as `by` in every audit-trail entry it writes (the inspector shows it).
   * @default "reconciler:" followed by a random id
   */
  id?: string;
  /**
   * How many records are reconciled at once (each one is one `reconcile` call, usually a request to the owner).
   * @default 4
   */
  concurrency?: number;
  /**
   * When a record is asked again after `reconcile` could not tell (or threw): `minDelayMs` after the first try,
   * doubling per try up to `maxDelayMs`. The time of the next try is kept in the record, so that every reconciler
   * of the fleet honours it, and a restart too.
   * @default { minDelayMs: 30_000, maxDelayMs: 3_600_000 }
   */
  backoff?: { minDelayMs?: number; maxDelayMs?: number };
  /**
   * The lease a reconciler holds on a record while it asks `reconcile` (renewed every third of it). A reconciler
   * that dies mid-question leaves the record pending with an expired lease and its attempts counted, which the
   * next reconciler, or the next call, takes as unknown again: nothing is decided twice, nothing is lost.
   * @default 30_000
   */
  leaseMs?: number;
  /**
   * Retention of a record the reconciler completes, counted from then, as the harness's `retentionMs`.
   * @default 7 days
   */
  retentionMs?: number;
  /** The pause between two sweeps of `start()`. @default 30_000 */
  intervalMs?: number;
  /** Records read per `store.list` page. @default 100 */
  pageSize?: number;
  /** Told of each decision and each record left undecided (for logs and metrics). A hook that throws is ignored. */
  onEvent?: (event: ReconcilerEvent) => void;
  /** The clock the reconciler compares leases and next tries with. @default Date.now */
  clock?: () => number;
}

export interface Resolved {
  store: Store;
  tools: Map<string, Tool<never, unknown>>;
  id: string;
  concurrency: number;
  minDelayMs: number;
  maxDelayMs: number;
  leaseMs: number;
  retentionMs: number;
  intervalMs: number;
  pageSize: number;
  onEvent: ((event: ReconcilerEvent) => void) | undefined;
  clock: () => number;
}

const STORE_METHODS = ["claim", "get", "update", "list"] as const;

export function resolveOptions(options: ReconcilerOptions): Resolved {
  if (typeof options !== "object" || options === null) {
    throw new TypeError(`createReconciler: options must be an object, got ${describe(options)}`);
  }
  const { store, id, onEvent, clock, backoff = {} } = options;
  for (const method of STORE_METHODS) {
    if (typeof (store as Partial<Store> | undefined)?.[method] !== "function") {
      throw new TypeError(
        `createReconciler: options.store must be a store (with ${STORE_METHODS.join(", ")}), got ${describe(store)}`,
      );
    }
  }
  if (id !== undefined && (typeof id !== "string" || id.length === 0)) {
    throw new TypeError(`createReconciler: options.id must be a non-empty string, got ${describe(id)}`);
  }
  if (onEvent !== undefined && typeof onEvent !== "function") {
    throw new TypeError(`createReconciler: options.onEvent must be a function, got ${describe(onEvent)}`);
  }
  if (clock !== undefined && typeof clock !== "function") {
    throw new TypeError(`createReconciler: options.clock must be a function, got ${describe(clock)}`);
  }
  if (typeof backoff !== "object" || backoff === null) {
    throw new TypeError(`createReconciler: options.backoff must be an object, got ${describe(backoff)}`);
  }
  const minDelayMs = numberOption("createReconciler: options.backoff.minDelayMs", backoff.minDelayMs, 30_000);
  const maxDelayMs = numberOption(
    "createReconciler: options.backoff.maxDelayMs",
    backoff.maxDelayMs,
    Math.max(minDelayMs, 3_600_000),
    { min: minDelayMs },
  );
  return {
    store,
    tools: toolMap(options.tools),
    id: id ?? `reconciler:${globalThis.crypto.randomUUID().slice(0, 8)}`,
    concurrency: numberOption("createReconciler: options.concurrency", options.concurrency, 4, {
      min: 1,
      integer: true,
    }),
    minDelayMs,
    maxDelayMs,
    leaseMs: numberOption("createReconciler: options.leaseMs", options.leaseMs, 30_000, { exclusive: true }),
    retentionMs: numberOption("createReconciler: options.retentionMs", options.retentionMs, 7 * 86_400_000, {
      exclusive: true,
    }),
    intervalMs: numberOption("createReconciler: options.intervalMs", options.intervalMs, 30_000),
    pageSize: numberOption("createReconciler: options.pageSize", options.pageSize, 100, {
      min: 1,
      integer: true,
    }),
    onEvent,
    clock: clock ?? Date.now,
  };
}

/** The tools by name: an array of tools, or a module's exports (whose members that are not tools are ignored). */
function toolMap(tools: ReconcilerOptions["tools"]): Map<string, Tool<never, unknown>> {
  if (typeof tools !== "object" || tools === null) {
    throw new TypeError(
      `createReconciler: options.tools must be an array of tools or an object of them, got ${describe(tools)}`,
    );
  }
  const list = Array.isArray(tools) ? tools : Object.values(tools).filter(isTool);
  const map = new Map<string, Tool<never, unknown>>();
  for (const [i, tool] of list.entries()) {
    if (!isTool(tool)) {
      throw new TypeError(`createReconciler: options.tools[${i}] must be a tool made by defineTool()`);
    }
    if (map.has(tool.name)) {
      throw new TypeError(`createReconciler: options.tools has two tools named ${JSON.stringify(tool.name)}`);
    }
    map.set(tool.name, tool as Tool<never, unknown>);
  }
  if (map.size === 0) {
    throw new TypeError("createReconciler: options.tools holds no tool made by defineTool()");
  }
  return map;
}
