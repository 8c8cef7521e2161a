import { afterEach, describe, expect, it, vi } from "vitest";
import { nextTurnTimer } from "../../src/claim/timer.js";

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
const wait = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

afterEach(() => {
  vi.restoreAllMocks();
});

describe("nextTurnTimer (the renewal timer)", () => {
  it("makes no timer for what is cancelled within the turn it was scheduled in", async () => {
    const schedule = nextTurnTimer({ unref: false });
    const made = vi.spyOn(globalThis, "setTimeout");
    let fired = 0;
    for (let i = 0; i < 100; i++) schedule(10, () => fired++)();
    await turn();
    await wait(30);
    expect(made.mock.calls.filter(([, ms]) => ms !== 30)).toHaveLength(0);
    expect(fired).toBe(0);
  });

  it("fires once what outlives its turn, at the time it was scheduled for, not later", async () => {
    // Fake timeouts and clock, a real setImmediate: the turn that arms the timer comes 60 ms (of fake time) late.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
    try {
      const schedule = nextTurnTimer({ unref: false });
      let fired = 0;
      schedule(80, () => fired++);
      vi.advanceTimersByTime(60);
      await turn();
      // Due 80 ms after it was scheduled, not 80 ms after the turn (140).
      vi.advanceTimersByTime(19);
      expect(fired).toBe(0);
      vi.advanceTimersByTime(1);
      expect(fired).toBe(1);
      vi.advanceTimersByTime(200);
      expect(fired).toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });

  it("cancels a timer already armed, and keeps others of the same turn", async () => {
    const schedule = nextTurnTimer({ unref: true });
    const fired: string[] = [];
    const a = schedule(20, () => fired.push("a"));
    schedule(20, () => fired.push("b"));
    await turn();
    a();
    await wait(50);
    expect(fired).toEqual(["b"]);
  });
});
