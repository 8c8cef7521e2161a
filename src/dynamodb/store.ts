import { describe } from "../options/describe.js";
import { checkNumber } from "../options/number-option.js";
import { recentClaims } from "../store/recent-claims.js";
import type { Store, StoreOptions } from "../store/types.js";
import { claimRecord } from "./claim.js";
import { type DynamoClient, guard } from "./client.js";
import type { DynamoContext } from "./context.js";
import { checkTable } from "./layout.js";
import { changedRecords, listRecords } from "./list.js";
import { purgeRecords } from "./purge.js";
import { readRecord } from "./read.js";
import { sendWithBackoff } from "./send.js";
import { deleteRecord, updateRecord } from "./write.js";

export interface DynamoStoreOptions extends StoreOptions {
  /**
   * The table the records live in. It must exist, keyed as `createDynamoTable` makes it (partition key `pk`, a
   * string, and the index `idemkey_order`); the first operation checks that and throws `StoreLayoutError` when it
   * is keyed otherwise. The harness ledger and the middleware may share one table, since their keys never collide.
   */
  table: string;
  /**
   * The clock leases and expiry are decided on. DynamoDB has no server time a condition can read, so each process
   * decides on its own clock: keep the machines' clocks synchronized (NTP, Amazon Time Sync) to well under the
   * shortest lease. A process whose clock runs ahead by more than the time left on a lease takes that lease over
   * early, as if its holder had stalled; the takeover path treats such a key as "may have started", so nothing runs
   * twice silently, but the key may end up `outcome_unknown` (docs/stores/dynamodb.md).
   * @default Date.now
   */
  clock?: () => number;
  /**
   * How long, in milliseconds of pauses, a request DynamoDB throttled (`ProvisionedThroughputExceededException`,
   * `ThrottlingException`) is sent again, after pauses starting at 25 ms and doubling up to 1 s, with jitter. A
   * throttled request was not applied, so sending it again is safe; after the budget the operation fails with a
   * `StoreError`. This is on top of the SDK client's own retries (its `maxAttempts`).
   * @default 5000
   */
  throttleRetryMs?: number;
}

/**
 * A store in a DynamoDB table, shared by every process and machine (and Lambda) with access to it. Each operation is
 * one conditional write or one strongly consistent read, decided by DynamoDB on the item as it stands: a fresh claim
 * is a `PutItem` with `attribute_not_exists(pk)` (or the item expired), a takeover and a completion are conditioned
 * on the token (and the takeover on the lapsed lease), so two claimants can never both win. Expiry is DynamoDB's
 * TTL attribute `ttl` (deleted lazily, up to days later; reads treat an expired item as absent at once).
 *
 * Pass the `DynamoDBClient` you already have (the store never builds or destroys one). Create the table with
 * `createDynamoTable` or your infrastructure code (docs/stores/dynamodb.md).
 *
 * @example
 * const store = dynamoStore(new DynamoDBClient({}), { table: "idemkey" });
 */
export function dynamoStore(client: DynamoClient, options: DynamoStoreOptions): Store {
  if (typeof (client as DynamoClient | null)?.send !== "function") {
    throw new TypeError(
      `dynamoStore: client must be a DynamoDBClient (or any object with send(command)), got ${describe(client)}`,
    );
  }
  const { table, clock, throttleRetryMs } = resolveOptions(options);
  const backoff = { firstMs: 25, maxMs: 1_000, budgetMs: throttleRetryMs };
  const context: DynamoContext = {
    table,
    clock,
    backoff,
    send: (command) => sendWithBackoff(client, command, backoff),
  };
  let checked: Promise<void> | undefined;
  const ready = () => {
    checked ??= checkTable(context, table).catch((error: unknown) => {
      checked = undefined; // a later call checks again, for example once the table is there
      throw error;
    });
    return checked;
  };
  const recent = recentClaims();
  return {
    claim: (key, input) =>
      guard("claim", key, async () => {
        await ready();
        return claimRecord(context, recent, key, input);
      }),
    get: (key) =>
      guard("get", key, async () => {
        await ready();
        const record = await readRecord(context, key);
        return record !== undefined && record.expiresAt > clock() ? record : undefined;
      }),
    update: (key, expect, patch) =>
      guard("update", key, async () => {
        await ready();
        return updateRecord(context, key, expect, patch);
      }),
    delete: (key, expect) =>
      guard("delete", key, async () => {
        await ready();
        return deleteRecord(context, key, expect);
      }),
    list: (query = {}) =>
      guard("list", undefined, async () => {
        await ready();
        return listRecords(context, query);
      }),
    changes: (query) =>
      guard("changes", undefined, async () => {
        await ready();
        return changedRecords(context, query);
      }),
    purge: ({ limit = 1000 } = {}) =>
      guard("purge", undefined, async () => {
        await ready();
        return purgeRecords(context, limit);
      }),
    // The client belongs to the caller, who destroys it.
    async close() {},
  };
}

function resolveOptions(options: DynamoStoreOptions) {
  if (typeof options !== "object" || options === null) {
    throw new TypeError(`dynamoStore: options must be an object with a table, got ${describe(options)}`);
  }
  const { table, clock = Date.now, throttleRetryMs = 5_000 } = options;
  if (typeof table !== "string" || !/^[a-zA-Z0-9_.-]{3,255}$/.test(table)) {
    throw new TypeError(
      `dynamoStore: options.table must be a DynamoDB table name (3-255 of a-z A-Z 0-9 _ . -), got ${describe(table)}`,
    );
  }
  if (typeof clock !== "function") {
    throw new TypeError(
      `dynamoStore: options.clock must be a function returning epoch ms, got ${describe(clock)}`,
    );
  }
  checkNumber("dynamoStore: options.throttleRetryMs", throttleRetryMs, { integer: true });
  return { table, clock, throttleRetryMs };
}
