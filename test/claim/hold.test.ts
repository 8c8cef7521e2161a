import { describe, expect, it } from "vitest";
import { holdClaim } from "../../src/claim/hold.js";
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
