import { setTimeout as sleep } from "node:timers/promises";
import { type DynamoClient, isThrottled } from "./client.js";

/** How long, in all, the store keeps resending throttled requests. */
export interface Backoff {
  /** The first pause, doubled after each throttled try up to `maxMs`. */
  firstMs: number;
  maxMs: number;
  /** The sum of pauses after which the throttling is reported as a `StoreError`. */
  budgetMs: number;
}

/**
 * Sends a command, and sends it again after a pause while DynamoDB answers that it was throttled: a throttled request
 * was not applied, so the resend cannot apply anything twice. Every other error goes to the caller as it came: a
 * `ConditionalCheckFailedException` is a decided "no", and an error after the request left (a timeout, a reset
 * connection, a 500) says nothing about whether it applied.
 */
export async function sendWithBackoff(
  client: DynamoClient,
  command: unknown,
  backoff: Backoff,
): Promise<
  // biome-ignore lint/suspicious/noExplicitAny: the output's shape depends on the command.
  any
> {
  let pause = backoff.firstMs;
  let paused = 0;
  for (;;) {
    try {
      return await client.send(command);
    } catch (error) {
      if (!isThrottled(error) || paused >= backoff.budgetMs) throw error;
      // Full jitter: throttled callers that waited alike would come back together.
      const wait = Math.min(Math.ceil(Math.random() * pause), backoff.budgetMs - paused);
      await sleep(Math.max(wait, 1));
      paused += Math.max(wait, 1);
      pause = Math.min(pause * 2, backoff.maxMs);
    }
  }
}
