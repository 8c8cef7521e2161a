/**
 * The seeded part of a chaos run: the tasks the scripted "model" works through and the faults injected into them.
 * Both are pure functions of the seed, so every mode (and a replay with `--seed`) sees the same tasks and the same
 * fault schedule; which faults are actually reached depends on the mode (a call answered from the ledger never
 * reaches its "after the owner's effect" point), never on timing: a task run by two workers at once has no other
 * fault, so the outcome of a seed is the same on every run.
 */

/** The tool calls every task makes, in order. The two messages are identical and told apart by `step`. */
export const CALLS = [
  { tool: "sendMessage", owner: "email", step: 1 },
  { tool: "openPullRequest", owner: "githost", step: undefined },
  { tool: "createCharge", owner: "payments", step: undefined },
  { tool: "sendMessage", owner: "email", step: 2 },
] as const;
export type CallIndex = 0 | 1 | 2 | 3;

/** Where a worker kills itself with SIGKILL, around one tool call. */
export const KillPoint = {
  /** Before `harness.call`: nothing was claimed or sent. */
  beforeCall: "before-call",
  /** Inside the tool, before the request: the ledger holds a pending claim, the owner saw nothing. */
  beforeSend: "before-send",
  /** Inside the tool, after the owner's answer: the effect happened, the ledger has not recorded it. */
  afterEffect: "after-effect",
  /** After `harness.call` returned: the effect and the ledger record both happened. */
  afterLedger: "after-ledger",
} as const;
export type KillPoint = (typeof KillPoint)[keyof typeof KillPoint];

/** What an owner does to the first request of a call, told by the demo-only `x-demo-fault` header. */
export const NetFault = {
  /** The owner commits the effect, then destroys the socket instead of answering. */
  lostResponse: "lost-response",
  /** The owner answers 503 before doing anything. */
  unavailable: "5xx",
} as const;
export type NetFault = (typeof NetFault)[keyof typeof NetFault];

export interface Task {
  readonly id: string;
  readonly repo: string;
  /** The branch; one pull request per (repo, head) is what the owner should end up with. */
  readonly head: string;
  /** The wordings the model picks from for the PR title: a replay re-samples the step and rewords it. */
  readonly titles: readonly string[];
  readonly customer: string;
  readonly amountCents: number;
  readonly to: string;
  readonly subject: string;
  readonly text: string;
}

export interface Kill {
  /** Which run of the task's primary copy (1 = first, 2 = the replay after the first kill). */
  readonly run: number;
  readonly call: CallIndex;
  readonly point: KillPoint;
}

export interface Net {
  readonly call: CallIndex;
  readonly kind: NetFault;
}

export interface TaskFaults {
  readonly kills: readonly Kill[];
  /** Fired on the first request of the call in the primary copy's first run. */
  readonly net: readonly Net[];
  /** The task is given to two workers at once. */
  readonly duplicate: boolean;
}

export interface Plan {
  readonly seed: number;
  readonly tasks: readonly Task[];
  /** Aligned with `tasks`. */
  readonly faults: readonly TaskFaults[];
}

/** How often each fault is drawn; tuned so that the default run shows every window in well under a minute. */
const RATES = { kill: 0.35, killOnReplay: 0.12, net: 0.45, duplicate: 0.12 };

const REPOS = ["acme/api", "acme/web", "acme/billing", "acme/infra"];
const TOPICS = ["retry storm in the webhook consumer", "stale cache on login", "rounding in invoice totals"];

/** mulberry32: small, fast and good enough to draw a reproducible schedule from a 32-bit seed. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Draws `count` tasks and their faults from `seed`. Kills and network faults go through every (point, call)
 * combination in a shuffled rotation rather than independently at random, so that any run with at least 16 kills
 * and 8 network faults covers every injection point on every tool.
 */
export function makePlan(seed: number, count: number): Plan {
  const next = random(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  const killCombos = shuffle(
    Object.values(KillPoint).flatMap((point) => CALL_INDEXES.map((call) => ({ point, call }))),
    next,
  );
  const netCombos = shuffle(
    Object.values(NetFault).flatMap((kind) => CALL_INDEXES.map((call) => ({ kind, call }))),
    next,
  );
  let kills = 0;
  let nets = 0;
  const tasks: Task[] = [];
  const faults: TaskFaults[] = [];
  for (let i = 0; i < count; i++) {
    const id = `task-${String(i + 1).padStart(3, "0")}`;
    const issue = 100 + Math.floor(next() * 900);
    const topic = pick(TOPICS);
    const head = `agent/${id}-issue-${issue}`;
    tasks.push({
      id,
      repo: pick(REPOS),
      head,
      titles: [
        `Fix #${issue}: ${topic}`,
        `Resolve issue ${issue} (${topic})`,
        `${topic[0]!.toUpperCase()}${topic.slice(1)}, fixes #${issue}`,
      ],
      customer: `cus_${Math.floor(next() * 1e8).toString(36)}`,
      amountCents: 500 + Math.floor(next() * 495) * 100,
      to: "oncall@acme.test",
      subject: `[${id}] CI status`,
      text: `The test suite is green on ${head}.`,
    });
    // A task given to two workers at once gets no other fault: which copy reaches a kill point or a lost answer first
    // is a race between processes, and a race would make the same seed give other numbers on another run.
    const duplicate = next() < RATES.duplicate;
    const taskKills: Kill[] = [];
    const net: Net[] = [];
    if (!duplicate) {
      if (next() < RATES.kill) {
        taskKills.push({ run: 1, ...killCombos[kills++ % killCombos.length]! });
        if (next() < RATES.killOnReplay)
          taskKills.push({ run: 2, ...killCombos[kills++ % killCombos.length]! });
      }
      if (next() < RATES.net) net.push(netCombos[nets++ % netCombos.length]!);
    }
    faults.push({ kills: taskKills, net, duplicate });
  }
  return { seed, tasks, faults };
}

const CALL_INDEXES: readonly CallIndex[] = [0, 1, 2, 3];

function shuffle<T>(items: T[], next: () => number): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}
