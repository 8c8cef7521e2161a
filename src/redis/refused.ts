import { setTimeout as sleep } from "node:timers/promises";

/**
 * Replies with which Redis refuses a command without running it, for a moment: a slot being resharded (`TRYAGAIN`,
 * `ASK`, `MOVED` the client did not follow), a cluster without a quorum or a failover under way (`CLUSTERDOWN`,
 * `MASTERDOWN`), a node still loading its data (`LOADING`), a replica or a master short of replicas that takes no
 * write (`READONLY`, `NOREPLICAS`: both fail a script at its first write, so none of its writes happened). Also
 * what a script gets when it reads a record key that a reshard has already moved off this node (`non local key`):
 * only `list` and `purge` read keys they do not declare, and both may run again. ioredis wraps the last of these in
 * "Too many Cluster redirections. Last error: ..." once its own retries are spent.
 */
const REFUSED =
  /^(?:Too many Cluster redirections\. Last error: (?:ReplyError: )?)?(?:TRYAGAIN|ASK|MOVED|CLUSTERDOWN|MASTERDOWN|LOADING|READONLY|NOREPLICAS)\b|non local key/;

export function isRefused(error: unknown): boolean {
  const message = String((error as Error)?.message);
  if (REFUSED.test(message)) return true;
  // node-redis's MaxCommandRedirectionsError carries the last redirection as its cause.
  return message === "Too many Cluster redirections" && isRefused((error as Error).cause);
}

/** How long to wait before the next try after a refusal: 25 ms doubling to 500 ms. */
export const nextRefusedDelay = (delay: number): number => Math.min(delay * 2, 500);

/**
 * Runs `operation`, and again while Redis refuses it without running it, for up to `budgetMs` in all, waiting 25 ms
 * doubling to 500 ms between tries; the client libraries follow redirections themselves but give up within about a
 * second and a half (ioredis: 16 tries 100 ms apart; node-redis does not retry `TRYAGAIN` or `CLUSTERDOWN` at all),
 * while a reshard or a failover lasts seconds. The last refusal is thrown when the budget is spent.
 */
export async function retryRefused<T>(operation: () => Promise<T>, budgetMs: number): Promise<T> {
  const deadline = Date.now() + budgetMs;
  for (let delay = 25; ; delay = Math.min(delay * 2, 500)) {
    try {
      return await operation();
    } catch (error) {
      const left = deadline - Date.now();
      if (!isRefused(error) || left <= 0) throw error;
      await sleep(Math.min(delay, left));
    }
  }
}
