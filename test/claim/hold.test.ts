import { describe, expect, it } from "vitest";
import { holdClaim } from "../../src/claim/hold.js";
import { unknownAfterTakeover } from "../../src/claim/late.js";
import type { Schedule } from "../../src/claim/types.js";
import { memoryStore } from "../../src/store/memory.js";
import { testClock } from "../stores/contract.js";

/** A renewal timer the test fires by hand. */
function manualSchedule() {
  const due: (() => void)[] = [];
  const schedule: Schedule = (_ms, fn) => {
    due.push(fn);
    return () => {
      const at = due.indexOf(fn);
      if (at >= 0) due.splice(at, 1);
    };
  };
  const fire = () => {
    for (const fn of due.splice(0)) fn();
  };
  return { schedule, fire, pending: () => due.length };
}

async function claimed(onLost?: () => void) {
  const clock = testClock();
  const store = memoryStore({ clock });
  const timers = manualSchedule();
  const input = { fingerprint: "f", token: "t1", leaseMs: 30_000, ttlMs: 60_000, data: null };
  await store.claim("k", input);
  const hold = holdClaim(
    { store, key: "k", fingerprint: "f", leaseMs: 30_000, ttlMs: 30_000, schedule: timers.schedule, onLost },
    "t1",
  );
  return { clock, store, timers, hold, input };
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("holdClaim", () => {
  it("renews the lease under its token, moving leaseUntil and expiresAt, until stopped", async () => {
    const { clock, store, timers, hold } = await claimed();
    clock.advance(10_000);
    timers.fire();
    await settle();
    const record = await store.get("k");
    expect(record?.leaseUntil).toBe(clock() + 30_000);
    expect(record?.expiresAt).toBe(clock() + 60_000);
    expect(timers.pending()).toBe(1);
    hold.stop();
    expect(timers.pending()).toBe(0);
  });

  it("tells onLost once and aborts lost when a renewal finds the key taken over, whether lost is read before or after", async () => {
    let told = 0;
    const early = await claimed(() => told++);
    const before = early.hold.lost;
    early.clock.advance(30_000);
    await early.store.claim("k", { ...early.input, token: "t2" });
    early.timers.fire();
    await settle();
    expect(told).toBe(1);
    expect(before.aborted).toBe(true);
    expect(early.hold.lost.aborted).toBe(true);
    expect(early.timers.pending()).toBe(0);

    const late = await claimed();
    late.clock.advance(30_000);
    await late.store.claim("k", { ...late.input, token: "t2" });
    late.timers.fire();
    await settle();
    // Read only after the loss: the signal made then is already aborted, with the same reason.
    expect(late.hold.lost.aborted).toBe(true);
    expect(String(late.hold.lost.reason)).toMatch(/taken over/);
  });

  it("does not report a loss after it was stopped, nor while the key is still held", async () => {
    let told = 0;
    const { timers, hold } = await claimed(() => told++);
    timers.fire();
    await settle();
    expect(told).toBe(0);
    expect(hold.lost.aborted).toBe(false);
    hold.stop();
    expect(told).toBe(0);
  });
});

describe("holdClaim's late save (issue 43, case 7)", () => {
  const completion = {
    state: "completed",
    token: null,
    leaseMs: null,
    result: '"done"',
    ttlMs: 60_000,
  } as const;
  const late = (record: { data: string | null }) => `${record.data ?? ""}+late`;

  /** A holder whose lease lapsed, and a taker that claimed the key over it (not yet marked unknown). */
  async function takenOver(pause?: (ms: number) => Promise<void>) {
    const clock = testClock();
    const store = memoryStore({ clock });
    const timers = manualSchedule();
    const input = { fingerprint: "f", token: "t1", leaseMs: 30_000, ttlMs: 60_000, data: "trail" };
    await store.claim("k", input);
    const spec = {
      store,
      key: "k",
      fingerprint: "f",
      leaseMs: 30_000,
      ttlMs: 30_000,
      schedule: timers.schedule,
    };
    const hold = holdClaim({ ...spec, ...(pause === undefined ? {} : { pause }) }, "t1");
    clock.advance(30_000);
    const taker = await store.claim("k", { ...input, token: "t2" });
    if (taker.status !== "taken_over") throw new Error(`expected a takeover, got ${taker.status}`);
    const taker2 = holdClaim(spec, "t2");
    /** The taker's step "mark unknown", keeping the token of the claim it took over. */
    const mark = () => taker2.write(unknownAfterTakeover(taker.previous, { ttlMs: 60_000 }));
    return { store, hold, mark, spec };
  }

  it("lands over the outcome_unknown record its taker left under its token, with the data `late` gives", async () => {
    const { store, hold, mark } = await takenOver();
    expect((await mark())?.state).toBe("outcome_unknown");
    const saved = await hold.save(completion, { late });
    expect(saved).toMatchObject({ state: "completed", token: null, result: '"done"', data: "trail+late" });
    expect(await store.get("k")).toMatchObject({ state: "completed", result: '"done"' });
  });

  it("is fenced on that token: another claim's save does not settle the unknown, nor does a save without `late`", async () => {
    const { store, hold, mark, spec } = await takenOver();
    await mark();
    // An attempt whose token the taker did not keep (the taker itself here, long gone from pending).
    const other = holdClaim(spec, "t2");
    expect(await other.save(completion, { late })).toBeUndefined();
    expect(await hold.save(completion)).toBeUndefined();
    expect(await store.get("k")).toMatchObject({ state: "outcome_unknown", token: "t1", result: null });
  });

  it("waits for a taker that has claimed the key but not yet recorded it unknown, then lands", async () => {
    let marked: Promise<unknown> | undefined;
    const waits: unknown[] = [];
    const { store, hold, mark } = await takenOver(async () => {
      // The taker's mark comes while the late save pauses: the claim and the mark are two writes.
      marked ??= mark();
      await marked;
    });
    const saved = await hold.save(completion, { late, onRetry: (error) => waits.push(error) });
    expect(waits).toEqual([undefined]);
    expect(saved?.state).toBe("completed");
    expect((await store.get("k"))?.data).toBe("trail+late");
  });

  it("gives up within its budget when the taker never records the outcome unknown (it runs the work again)", async () => {
    const pauses: number[] = [];
    const { store, hold } = await takenOver(async (ms) => {
      pauses.push(ms);
    });
    expect(await hold.save(completion, { late })).toBeUndefined();
    expect(pauses.reduce((a, b) => a + b, 0)).toBe(60_000);
    expect(await store.get("k")).toMatchObject({ state: "pending", token: "t2" });
  });
});
