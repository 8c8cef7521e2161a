import type { EffectRow, Owner } from "./owners/index.js";
import type { Mode } from "./protocol.js";
import { CALLS, type KillPoint, type NetFault, type Task } from "./schedule.js";
import type { Stats } from "./supervisor.js";

/** Why an effect beyond the expected happened, read from the demo trace of the request that caused it. */
export interface Causes {
  /** Another attempt of the same call in the same process: a retry after the answer was lost or failed. */
  retry: number;
  /** The same call in a later run of the task: the replay after its worker was killed. */
  replay: number;
  /** The same call from the task's other copy, running at the same time on another worker. */
  concurrent: number;
}

export interface OwnerReport {
  owner: string;
  tool: string;
  effect: string;
  /** Tool calls the agents made to this owner's tool, replays included. */
  calls: number;
  /** POST requests that reached the owner, as it logged them. */
  attempts: number;
  /** Requests the owner answered from the record of their key instead of acting again. */
  replays: number;
  /** Workers killed during one of this tool's calls. */
  crashes: number;
  /** Effects the owner should hold if every task's effects happened once. */
  expected: number;
  /** Effects the owner holds, read from its own database. */
  observed: number;
  /** Effects beyond the expected, summed over what counts as one (a PR per repo and branch, a charge per task...). */
  duplicates: number;
  /** Expected effects that never happened. */
  missing: number;
  /** Calls whose outcome was unknown and reached the agent as `OutcomeUnknownError`. */
  unknownSurfaced: number;
  /** For the unguarded tool: messages sent again without the agent being told (every duplicate message is one). */
  silentRepeats: number;
  causes: Causes;
}

export interface ModeReport {
  mode: Mode;
  title: string;
  wallMs: number;
  crashes: number;
  faults: {
    /** Workers killed, by point and then by the tool whose call was under way. */
    kills: Record<KillPoint, Record<string, number>>;
    net: Record<NetFault, number>;
    /** Tasks given to two workers at once. */
    concurrent: number;
  };
  owners: OwnerReport[];
  /**
   * Ambiguous failures of the unguarded tool (a lost answer, a 5xx, a kill while its call was pending) after which
   * no `OutcomeUnknownError` reached an agent: `task#call (fault)`. Only meaningful with a durable ledger.
   */
  unsurfaced: string[];
  failures: string[];
}

export const TITLES: Record<Mode, string> = {
  naive: "naive retries, no key",
  local: "key in an in-memory ledger, not sent to the owners",
  idemkey: "idemkey: key forwarded to the owners + durable shared ledger",
};

/** Puts the owners' own records beside what the supervisor saw. */
export function tally(
  mode: Mode,
  tasks: readonly Task[],
  owners: readonly Owner[],
  stats: Stats,
  wallMs: number,
): ModeReport {
  const reports = owners.map((owner): OwnerReport => {
    const expected = owner.expected(tasks);
    const rows = owner.effects();
    const counts = new Map<string, number>();
    for (const row of rows) counts.set(row.group, (counts.get(row.group) ?? 0) + 1);
    let duplicates = 0;
    let missing = 0;
    for (const [group, want] of expected) {
      const got = counts.get(group) ?? 0;
      duplicates += Math.max(0, got - want);
      missing += Math.max(0, want - got);
    }
    // Effects in groups no task expects (there should be none) are duplicates of nothing: count them too.
    for (const [group, got] of counts) if (!expected.has(group)) duplicates += got;
    const { attempts, replays } = owner.requests();
    return {
      owner: owner.name,
      tool: owner.tool,
      effect: owner.effect,
      calls: stats.calls[owner.tool] ?? 0,
      attempts,
      replays,
      crashes: stats.kills.filter((k) => k.tool === owner.tool).length,
      expected: [...expected.values()].reduce((a, b) => a + b, 0),
      observed: rows.length,
      duplicates,
      missing,
      unknownSurfaced: stats.unknown.filter((u) => u.tool === owner.tool).length,
      silentRepeats: owner.effect === "unguarded" ? duplicates : 0,
      causes: causesOf(rows),
    };
  });
  const kills: ModeReport["faults"]["kills"] = {
    "before-call": {},
    "before-send": {},
    "after-effect": {},
    "after-ledger": {},
  };
  for (const k of stats.kills) kills[k.point][k.tool] = (kills[k.point][k.tool] ?? 0) + 1;
  const net = { "lost-response": 0, "5xx": 0 };
  for (const n of stats.net) net[n.kind]++;
  return {
    mode,
    title: TITLES[mode],
    wallMs,
    crashes: stats.kills.length,
    faults: { kills, net, concurrent: stats.concurrent },
    owners: reports,
    unsurfaced: unsurfaced(stats),
    failures: stats.failures,
  };
}

/** Each effect compared with the earlier effects of the same call in its group: which window let it through. */
function causesOf(rows: readonly EffectRow[]): Causes {
  const causes: Causes = { retry: 0, replay: 0, concurrent: 0 };
  const seen = new Map<string, Trace>();
  for (const row of rows) {
    const trace = parseTrace(row.trace);
    if (trace === undefined) continue;
    const id = `${row.group}#${trace.call}`;
    const before = seen.get(id);
    seen.set(id, trace);
    if (before === undefined) continue;
    if (before.copy !== trace.copy) causes.concurrent++;
    else if (before.run !== trace.run) causes.replay++;
    else causes.retry++;
  }
  return causes;
}

interface Trace {
  copy: string;
  run: number;
  call: number;
}

function parseTrace(trace: string | null): Trace | undefined {
  const match = trace === null ? null : /^([pd])(\d+)\.(\d+)\.\d+$/.exec(trace);
  if (match === null) return undefined;
  return { copy: match[1]!, run: Number(match[2]), call: Number(match[3]) };
}

/** Ambiguous faults on the unguarded calls that no agent was told about. */
function unsurfaced(stats: Stats): string[] {
  const told = new Set(stats.unknown.map((u) => `${u.task}#${u.call}`));
  const unguarded = (call: number) => CALLS[call as 0]?.owner === "email";
  const ambiguous = [
    ...stats.net.filter((n) => unguarded(n.call)).map((n) => ({ ...n, what: n.kind })),
    ...stats.kills
      .filter((k) => unguarded(k.call) && (k.point === "before-send" || k.point === "after-effect"))
      .map((k) => ({ ...k, what: `kill ${k.point}` })),
  ];
  return (
    ambiguous
      .filter((a) => !told.has(`${a.task}#${a.call}`))
      .map((a) => `${a.task}#${a.call} (${a.what})`)
      // In the order of the tasks, not of the events: workers finish in whatever order the machine allows.
      .sort()
  );
}
