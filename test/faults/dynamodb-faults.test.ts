import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDynamoTable, dynamoStore } from "../../src/dynamodb/index.js";
import { OutcomeUnknownError } from "../../src/errors/outcome-unknown-error.js";
import { StoreError } from "../../src/errors/store-error.js";
import { createHarness, defineTool } from "../../src/index.js";
import { privateDynalite } from "../support/dynalite.js";
import { effectLog } from "../support/effect-log.js";

/**
 * Issue 45: DynamoDB has no server time a condition can read, so leases are decided on each caller's clock (the
 * store's `clock` option here plays a process whose clock runs ahead). Unlike PostgreSQL and Redis (issue 18, case 3),
 * a process ahead by more than what is left of a lease takes it over early. What must hold all the same: the holder
 * it replaced can no longer write, and a takeover of a call that may have started is never a second run.
 */
const dynalite = await privateDynalite();
const client = dynalite.client();
const table = `idemkey-skew-${randomUUID().slice(0, 8)}`;
beforeAll(() => createDynamoTable(client, { table }));
afterAll(() => dynalite.stop());

describe("case 3 on DynamoDB: a client whose clock runs ahead", () => {
  const ahead = (ms: number) => () => Date.now() + ms;

  it("cannot take over a lease while its skew is less than what is left of it", async () => {
    const store = dynamoStore(client, { table });
    const skewed = dynamoStore(client, { table, clock: ahead(500) });
    const key = `skew:${randomUUID()}`;
    expect(
      (await store.claim(key, { fingerprint: "fp", token: "a", leaseMs: 60_000, ttlMs: 60_000 })).status,
    ).toBe("claimed");
    const second = await skewed.claim(key, { fingerprint: "fp", token: "b", leaseMs: 60_000, ttlMs: 60_000 });
    expect(second.status).toBe("exists");
  });

  it("takes over a live lease when ahead by more than it, and the holder it replaced can no longer write", async () => {
    const store = dynamoStore(client, { table });
    const skewed = dynamoStore(client, { table, clock: ahead(20_000) });
    const key = `skew:${randomUUID()}`;
    await store.claim(key, { fingerprint: "fp", token: "a", leaseMs: 2_000, ttlMs: 60_000 });
    const second = await skewed.claim(key, { fingerprint: "fp", token: "b", leaseMs: 2_000, ttlMs: 60_000 });
    // The documented consequence of deciding on the caller's clock (docs/stores/dynamodb.md).
    expect(second.status).toBe("taken_over");
    // The first holder's completion is fenced by the token: it cannot overwrite the taker's claim.
    expect(
      await store.update(key, { token: "a", state: "pending" }, { state: "completed", result: "1" }),
    ).toBe(undefined);
    expect(await store.get(key)).toMatchObject({ state: "pending", token: "b" });
  });

  it("never runs an unguarded tool twice: the skewed caller's takeover ends in OutcomeUnknownError", async () => {
    const log = effectLog("skew");
    try {
      let entered!: () => void;
      const inside = new Promise<void>((resolve) => {
        entered = resolve;
      });
      let finish!: () => void;
      const held = new Promise<void>((resolve) => {
        finish = resolve;
      });
      const tool = defineTool({
        name: "wire",
        effect: "unguarded",
        run: async (args: { cents: number }) => {
          log.effect(String(args.cents));
          entered();
          await held;
          return { sent: args.cents };
        },
      });
      const options = { leaseMs: 2_000, retry: { retries: 0 } };
      const holder = createHarness({ store: dynamoStore(client, { table }), ...options });
      const skewed = createHarness({
        store: dynamoStore(client, { table, clock: ahead(20_000) }),
        ...options,
      });
      const task = `skew-${randomUUID()}`;
      const first = holder.call(task, tool, { cents: 5 });
      await inside; // the tool has started: its attempt is marked in the store
      const second = await skewed.call(task, tool, { cents: 5 }).catch((error: unknown) => error);
      expect(second).toBeInstanceOf(OutcomeUnknownError);
      finish();
      await first.catch(() => {});
      expect(log.count("5")).toBe(1);
    } finally {
      log.cleanup();
    }
  });
});

describe("a reply lost after DynamoDB applied the write", () => {
  interface Sent {
    constructor: { name: string };
    input: { ExpressionAttributeValues?: Record<string, { S?: string }> };
  }
  /**
   * A client that sends the first command `lose` picks to dynalite, waits until it applied, then throws what a
   * connection cut before the reply throws (`socket hang up`, ECONNRESET): an error that says nothing of whether the
   * request applied.
   */
  function losingReply(lose: (command: Sent) => boolean) {
    let lost = false;
    return {
      async send(command: Sent) {
        const output = await client.send(command as never);
        if (!lost && lose(command)) {
          lost = true;
          throw Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
        }
        return output;
      },
      /** Whether a reply was lost: the test saw the fault it is about. */
      get lost() {
        return lost;
      },
    };
  }
  const put = (command: Sent) => command.constructor.name === "PutItemCommand";
  /** The completion: the update that sets the state to completed. */
  const completion = (command: Sent) =>
    command.constructor.name === "UpdateItemCommand" &&
    command.input.ExpressionAttributeValues?.[":s"]?.S === "completed";

  it("is an unknown (StoreError), and the claim sent again answers what the first decided", async () => {
    const store = dynamoStore(losingReply(put), { table });
    const key = `lost:${randomUUID()}`;
    const input = { fingerprint: "fp", token: "t", leaseMs: 10_000, ttlMs: 60_000 };
    const error = await store.claim(key, input).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as Error).message).toContain("may or may not have been applied");
    // The put did apply: sent again with the same token, the claim is this caller's, not another's.
    expect((await store.claim(key, input)).status).toBe("claimed");
    expect((await store.claim(key, { ...input, token: "other" })).status).toBe("exists");
  });

  it("through the harness, on the completion: the tool runs once, the save finds it applied, the call replays", async () => {
    const log = effectLog("lost-reply");
    try {
      const tool = defineTool({
        name: "ship",
        effect: "keyed",
        run: async (args: { order: number }, { idempotencyKey: key }) => {
          log.effect(key);
          return { shipped: args.order };
        },
      });
      const losing = losingReply(completion);
      const harness = createHarness({ store: dynamoStore(losing, { table }) });
      const task = `lost-${randomUUID()}`;
      expect(await harness.call(task, tool, { order: 7 })).toEqual({ shipped: 7 });
      expect(await harness.call(task, tool, { order: 7 })).toEqual({ shipped: 7 });
      expect(losing.lost).toBe(true);
      expect(log.count()).toBe(1);
      const records = await dynamoStore(client, { table }).list({ prefix: "" });
      expect(records.filter((r) => r.data?.includes(task)).map((r) => r.state)).toEqual(["completed"]);
    } finally {
      log.cleanup();
    }
  });
});

describe("a write the SDK sends twice", () => {
  /**
   * What the SDK's own retry does after a timeout whose request had applied: the same command, the same bytes, a
   * second time. This client sends every write twice and answers what the second arrival got.
   */
  const twice = {
    async send(command: { constructor: { name: string } }) {
      if (!/^(Put|Update|Delete)Item/.test(command.constructor.name)) return client.send(command as never);
      await client.send(command as never).catch(() => {});
      return client.send(command as never);
    },
  };

  it("answers as its first arrival decided: the claim is claimed, the update applied, not lost", async () => {
    const store = dynamoStore(twice, { table });
    const key = `twice:${randomUUID()}`;
    const claimed = await store.claim(key, { fingerprint: "fp", token: "t", leaseMs: 10_000, ttlMs: 60_000 });
    expect(claimed.status).toBe("claimed");
    const done = await store.update(
      key,
      { token: "t", state: "pending" },
      { state: "completed", result: "1", token: null, leaseMs: null },
    );
    expect(done).toMatchObject({ state: "completed", result: "1", token: null });
  });

  it("through the harness: an unguarded tool runs once and its call returns its result", async () => {
    const log = effectLog("twice");
    try {
      const tool = defineTool({
        name: "refund",
        effect: "unguarded",
        run: async (args: { cents: number }) => {
          log.effect(String(args.cents));
          return { refunded: args.cents };
        },
      });
      const harness = createHarness({ store: dynamoStore(twice, { table }), retry: { retries: 0 } });
      const task = `twice-${randomUUID()}`;
      expect(await harness.call(task, tool, { cents: 3 })).toEqual({ refunded: 3 });
      expect(await harness.call(task, tool, { cents: 3 })).toEqual({ refunded: 3 });
      expect(log.count("3")).toBe(1);
    } finally {
      log.cleanup();
    }
  });
});
