/**
 * Time budgets from the work a test does, not from a guess at the machine's speed: a test that starts child
 * processes gets the suite's per-test allowance (vitest.config.ts) for each process it starts and waits on, so a
 * loaded machine slows it down without failing it, and a hang still ends it.
 */
export const PER_PROCESS_MS = 30_000;

/** The timeout of a test that starts and waits on `processes` child processes. */
export function processBudget(processes: number): number {
  return Math.max(1, processes) * PER_PROCESS_MS;
}
