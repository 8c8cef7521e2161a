import type { Backoff } from "./send.js";

/** What every operation of one store shares, resolved once by `dynamoStore`. */
export interface DynamoContext {
  table: string;
  /** The clock leases and expiry are decided on (see the store's `clock` option). */
  clock: () => number;
  // biome-ignore lint/suspicious/noExplicitAny: the output's shape depends on the command.
  send(command: unknown): Promise<any>;
  backoff: Backoff;
}
