/** Latency figures of one contender, in microseconds. */
export interface Latency {
  p50: number;
  p99: number;
  mean: number;
  count: number;
}

/** The middle value of `values` (the upper one of the two middles for an even count), leaving `values` as it is. */
export const median = (values: number[]): number => [...values].sort((a, b) => a - b)[values.length >> 1]!;

export interface RoundsOptions {
  /** How many times every contender gets a slice. @default 5 */
  rounds?: number;
  /** How long one contender runs in one round, in milliseconds. @default 300 */
  sliceMs?: number;
  /** How long every contender runs once, unrecorded, before the first round. @default 150 */
  warmupMs?: number;
}

/**
 * Times each call of each contender, giving them short slices in turn, round after round. The machine is shared and
 * its load drifts over seconds: a contender run in one block (as tinybench runs its tasks) can land on a quiet
 * stretch and its rival on a busy one, while slices spread the drift over all of them alike.
 */
export async function inRounds(
  contenders: Record<string, () => unknown>,
  options: RoundsOptions = {},
): Promise<Map<string, Latency>> {
  const { rounds = 5, sliceMs = 300, warmupMs = 150 } = options;
  const samples = new Map<string, number[]>(Object.keys(contenders).map((name) => [name, []]));
  const slice = async (fn: () => unknown, ms: number, into: number[] | undefined) => {
    const end = performance.now() + ms;
    for (;;) {
      const start = performance.now();
      if (start >= end) return;
      await fn();
      into?.push(performance.now() - start);
    }
  };
  for (const fn of Object.values(contenders)) await slice(fn, warmupMs, undefined);
  for (let round = 0; round < rounds; round++) {
    for (const [name, fn] of Object.entries(contenders)) await slice(fn, sliceMs, samples.get(name));
  }
  const out = new Map<string, Latency>();
  for (const [name, ms] of samples) {
    if (ms.length === 0) throw new Error(`bench contender "${name}" completed no call`);
    const sorted = Float64Array.from(ms).sort();
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! * 1000;
    const mean = (sorted.reduce((a, b) => a + b, 0) / sorted.length) * 1000;
    out.set(name, { p50: at(0.5), p99: at(0.99), mean, count: sorted.length });
  }
  return out;
}

/** `median (min-max)` of per-round figures, the spread a reader needs to judge a ratio. */
export function spread(values: number[], digits: number): string {
  const f = (n: number) => n.toFixed(digits);
  return values.length === 1
    ? f(values[0]!)
    : `${f(median(values))} (${f(Math.min(...values))}-${f(Math.max(...values))})`;
}
