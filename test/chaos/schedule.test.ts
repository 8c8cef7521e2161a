import { describe, expect, it } from "vitest";
import { CALLS, KillPoint, makePlan, NetFault } from "../../demo/schedule.js";

describe("the chaos schedule", () => {
  it("is a pure function of the seed", () => {
    expect(makePlan(42, 60)).toEqual(makePlan(42, 60));
    expect(makePlan(42, 60)).not.toEqual(makePlan(43, 60));
  });

  it("goes through every kill point on every call, and every network fault on every call", () => {
    const plan = makePlan(9, 200);
    const kills = new Set(plan.faults.flatMap((f) => f.kills.map((k) => `${k.point} ${k.call}`)));
    const nets = new Set(plan.faults.flatMap((f) => f.net.map((n) => `${n.kind} ${n.call}`)));
    expect(kills.size).toBe(Object.values(KillPoint).length * CALLS.length);
    expect(nets.size).toBe(Object.values(NetFault).length * CALLS.length);
    expect(plan.faults.some((f) => f.duplicate)).toBe(true);
    // A second kill only ever falls on the replay, so that every task finishes by its third run.
    for (const f of plan.faults)
      expect(f.kills.map((k) => k.run)).toEqual(f.kills.length === 2 ? [1, 2] : f.kills.map(() => 1));
  });

  it("gives each task one pull request branch of its own", () => {
    const plan = makePlan(1, 300);
    expect(new Set(plan.tasks.map((t) => `${t.repo} ${t.head}`)).size).toBe(300);
    expect(new Set(plan.tasks.map((t) => t.subject)).size).toBe(300);
  });
});
