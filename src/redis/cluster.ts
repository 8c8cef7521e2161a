import { StoreConfigError } from "../errors/store-config-error.js";

/**
 * The part of `prefix` Redis Cluster hashes for every key under it: the text between the first `{` and the first
 * `}` after it, when not empty. Without one, a store's record and its two indexes land in different slots and every
 * script is refused with `CROSSSLOT`.
 */
export function hashTag(prefix: string): string | undefined {
  const open = prefix.indexOf("{");
  const close = open < 0 ? -1 : prefix.indexOf("}", open + 1);
  return close > open + 1 ? prefix.slice(open + 1, close) : undefined;
}

/** An ioredis `Cluster` (`isCluster`) or a node-redis `createCluster` client (`getSlotRandomNode`). */
export function isClusterClient(client: unknown): boolean {
  const c = client as { isCluster?: unknown; getSlotRandomNode?: unknown };
  return c.isCluster === true || typeof c.getSlotRandomNode === "function";
}

/** Checks the prefix at factory time when the client is a cluster client. */
export function checkClusterPrefix(client: unknown, prefix: string): void {
  if (isClusterClient(client) && hashTag(prefix) === undefined) {
    throw new TypeError(
      `redisStore: options.prefix ${JSON.stringify(prefix)} has no hash tag, which a Redis Cluster client needs: ` +
        `put a non-empty {...} part in it (such as "{idemkey}:") so that every key of the store is in one slot`,
    );
  }
}

/** Replies that mean the keys of one script are in different slots: the prefix, never the moment, is wrong. */
const CROSS_SLOT = /CROSSSLOT|do not hash to the same slot/;

/** Turns a reply that no retry can fix into a `StoreConfigError` naming the option; passes the rest on. */
export function refuseConfig(error: unknown, prefix: string): never {
  const message = String((error as Error)?.message);
  if (CROSS_SLOT.test(message)) {
    throw new StoreConfigError({
      store: "redis",
      option: "prefix",
      value: prefix,
      reply: message,
      reason: "cross-slot",
      cause: error,
    });
  }
  throw error;
}
