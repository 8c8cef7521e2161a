import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { createHarness, type Harness, type HarnessEvent, type HarnessOptions } from "../../../src/index.js";
import { sqliteStore } from "../../../src/sqlite/index.js";
import type { Store } from "../../../src/store/types.js";
import { type TestClock, testClock } from "../../stores/contract.js";
import { type Behaviour, type FakeOwner, fakeOwner, REFUSAL } from "./owner.js";

/** The tool every scenario calls, in neutral terms: each driver builds its framework's tool from it. */
export interface ToolSpec {
  readonly name: string;
  readonly effect: "keyed" | "unguarded";
  readonly behaviour: Behaviour;
  /** The input schema generates a field per call (`z.string().default(() => randomUUID())`). */
  readonly generatedDefault: boolean;
  /**
   * The tool author's declared classifier: the owner's refusal had no effect. Left out, no classifier is declared
   * (the default): nobody vouches for any error.
   */
  readonly noEffect?: (error: unknown) => boolean;
}

/** What the model asks for: the arguments every call sends. */
export const ARGS = { to: "dana@example.com", cents: 4_999 };

/** What the caller (or the model, for a framework that shows it one) saw of a call. */
export interface Seen {
  /** The text the model reads (or the adapter hands back), with the value in it. */
  readonly text: string;
  /** The call failed, or the framework answered an error: what it failed with (the framework's own form). */
  readonly error?: unknown;
}

/**
 * The text of what a framework showed: a string as it is, anything else as its JSON and every string in it (so that a
 * model text inside a JSON value is found unescaped).
 */
export function textOf(value: unknown): string {
  if (typeof value === "string") return value;
  const strings: string[] = [];
  const visit = (v: unknown): void => {
    if (typeof v === "string") strings.push(v);
    else if (Array.isArray(v)) v.forEach(visit);
    else if (typeof v === "object" && v !== null) Object.values(v).forEach(visit);
  };
  visit(value);
  return [JSON.stringify(value), ...strings].join("\n");
}

/** The faults a scenario switches on; read on every operation, so a switch applies to instances already open. */
export interface Faults {
  /** The store acknowledges the completion write without making it: the process died right after the effect. */
  dropCompletion: boolean;
  /** The harness's `onEvent` throws. */
  throwingHook: boolean;
}

/**
 * Everything one scenario run shares across its "processes": the SQLite file (a durable store), the clock leases
 * are measured with, the fake owner and its file, the caller's signal.
 */
export interface World {
  readonly spec: ToolSpec;
  readonly taskId: string;
  readonly owner: FakeOwner;
  readonly clock: TestClock;
  readonly faults: Faults;
  /** The caller's signal: aborting it is the caller hanging up. */
  readonly caller: AbortController;
  /** A new process's store: a new SQLite connection to the scenario's file, with the faults applied. */
  store(): Store;
  /** A new process's harness on `store()`. */
  harness(): Harness;
  /** The options `harness()` makes its harness with: for a wrapper that makes its own (`tracedHarness`). */
  harnessOptions(): HarnessOptions;
  /** The tool's input schema as a zod shape (for `tool()`s that take one) and as an object schema. */
  shape(): z.ZodRawShape;
  schema(): z.ZodObject;
  /** Closes every store the world opened and removes its files. */
  close(): Promise<void>;
}

export const LEASE_MS = 30_000;

export function openWorld(spec: ToolSpec): World {
  const dir = mkdtempSync(join(tmpdir(), "idemkey-contract-"));
  const clock = testClock(Date.now());
  const faults: Faults = { dropCompletion: false, throwingHook: false };
  const caller = new AbortController();
  const stores: Store[] = [];
  const world: World = {
    spec,
    taskId: `task-${randomUUID()}`,
    owner: fakeOwner(join(dir, "owner.jsonl"), spec.behaviour, {
      dedupes: spec.effect === "keyed",
      hangUp: caller.signal,
    }),
    clock,
    faults,
    caller,
    store() {
      const store = faultyStore(sqliteStore(join(dir, "ledger.db"), { clock }), faults);
      stores.push(store);
      return store;
    },
    harness() {
      return createHarness(world.harnessOptions());
    },
    harnessOptions() {
      return {
        store: world.store(),
        clock,
        leaseMs: LEASE_MS,
        retry: { minDelayMs: 1, maxDelayMs: 5, jitter: false },
        onEvent: (_event: HarnessEvent) => {
          if (faults.throwingHook) throw new Error("the telemetry exporter is down");
        },
      };
    },
    shape() {
      return {
        to: z.string(),
        cents: z.number(),
        ...(spec.generatedDefault ? { ref: z.string().default(() => randomUUID()) } : {}),
      };
    },
    schema() {
      return z.object(world.shape());
    },
    async close() {
      for (const store of stores) await store.close?.();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return world;
}

/** The declared classifier of every spec: the owner's refusal, however the framework carried it. */
export function saysRefused(error: unknown): boolean {
  const seen = new Set<unknown>();
  const visit = (value: unknown): boolean => {
    if (value === null || value === undefined || seen.has(value)) return false;
    if (typeof value === "string") return value.includes(REFUSAL);
    if (typeof value !== "object") return false;
    seen.add(value);
    const fields = value as { message?: unknown; answer?: unknown; result?: unknown; cause?: unknown };
    if (visit(fields.message) || visit(fields.cause) || visit(fields.answer) || visit(fields.result))
      return true;
    try {
      return JSON.stringify(value).includes(REFUSAL);
    } catch {
      return false;
    }
  };
  return visit(error);
}

function faultyStore(inner: Store, faults: Faults): Store {
  return {
    ...inner,
    claim: (...args) => inner.claim(...args),
    get: (...args) => inner.get(...args),
    delete: (...args) => inner.delete(...args),
    list: (...args) => inner.list(...args),
    purge: (...args) => inner.purge(...args),
    close: () => inner.close(),
    async update(key, expect, patch) {
      if (!faults.dropCompletion || patch.state !== "completed") return inner.update(key, expect, patch);
      // Acknowledged, never written: the record stays pending under a lease nobody renews.
      const record = await inner.get(key);
      return record === undefined ? undefined : { ...record, ...patch };
    },
  };
}
