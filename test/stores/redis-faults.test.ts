import { randomBytes, randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import { createClient } from "redis";
import { afterAll, describe, expect, it } from "vitest";
import { StoreError } from "../../src/errors/index.js";
import { type RedisClientLike, redisStore } from "../../src/redis/index.js";
import type { Store } from "../../src/store/types.js";
import { deleteKeysUnder, redisService } from "../support/services.js";

const service = await redisService();
const prefix = `{idemkey-test-faults-${randomBytes(4).toString("hex")}}:`;
/** The test's own connection: it pauses, kills and reads records apart from the store. */
const admin = new Redis(service.url, { lazyConnect: true });
if (!service.skip) await admin.connect();

afterAll(async () => {
  if (!service.skip) await deleteKeysUnder(admin, prefix);
  admin.disconnect();
});

interface Client {
  client: RedisClientLike;
  id: () => Promise<number>;
  close: () => Promise<void>;
}

const clients = {
  "ioredis (maxRetriesPerRequest: 0)": async (): Promise<Client> => {
    const client = new Redis(service.url, { maxRetriesPerRequest: 0 });
    return {
      client,
      id: async () => Number(await client.client("ID")),
      close: async () => client.disconnect(),
    };
  },
  "node-redis": async (): Promise<Client> => {
    const client = createClient({ url: service.url });
    client.on("error", () => {}); // the application's job; the failed command rejects on its own
    await client.connect();
    return { client, id: () => client.clientId(), close: () => client.close() };
  },
};

/**
 * Runs `call` so that its command reaches Redis and waits there (CLIENT PAUSE WRITE holds it unexecuted), then
 * kills the store's connection with CLIENT KILL, then lets Redis go on. The pause lasts a few milliseconds.
 */
async function killMidCall<T>(id: number, call: () => Promise<T>): Promise<T | unknown> {
  await admin.client("PAUSE", 10_000, "WRITE");
  try {
    const pending = call().catch((error: unknown) => ({ rejected: error }));
    for (let i = 0; ; i++) {
      const line = String(await admin.client("LIST", "ID", id));
      if (/ flags=\w*b/.test(line) && / cmd=(?:eval|fcall)/.test(line)) break;
      if (i > 1000) throw new Error(`the store's command never reached Redis: ${line}`);
      await sleep(2);
    }
    await admin.client("KILL", "ID", id);
    return pending;
  } finally {
    await admin.client("UNPAUSE");
  }
}

/** The record's hash as Redis holds it (layout 2), or null; an absent field is a null one. */
const read = async (key: string) => {
  const fields = await admin.hgetall(`${prefix}r:${key}`);
  return Object.keys(fields).length === 0 ? null : { result: null, ...fields };
};

for (const [name, connect] of Object.entries(clients)) {
  (service.skip ? describe.skip : describe)(
    `Redis faults, ${name}: CLIENT KILL in the middle of a call`,
    () => {
      let connection: Client;
      let store: Store;
      afterAll(() => connection?.close());

      it("a completion cut off fails clearly, records nothing, and the next call recovers", async () => {
        connection = await connect();
        store = redisStore(connection.client, { prefix });
        const key = `complete:${randomUUID()}`;
        const { record } = await store.claim(key, {
          fingerprint: "fp",
          token: "tok",
          leaseMs: 60_000,
          ttlMs: 600_000,
        });

        const outcome = await killMidCall(await connection.id(), () =>
          store.update(key, { token: record.token! }, { state: "completed", result: '"done"' }),
        );
        const error = (outcome as { rejected: unknown }).rejected;
        expect(error).toBeInstanceOf(StoreError);
        expect(error).toMatchObject({ store: "redis", operation: "update", key, retryable: true });
        expect((error as Error).message).toMatch(/^redis store: update of key ".*" failed: /);
        expect(await read(key)).toMatchObject({ state: "pending", token: "tok", result: null });

        expect(
          await store.update(key, { token: "tok" }, { state: "completed", result: '"done"' }),
        ).toMatchObject({
          state: "completed",
          result: '"done"',
        });
        expect(await read(key)).toMatchObject({ state: "completed", result: '"done"' });
      });

      it("a claim cut off fails clearly, leaves no record, and the next claim wins", async () => {
        const key = `claim:${randomUUID()}`;
        const outcome = await killMidCall(await connection.id(), () =>
          store.claim(key, { fingerprint: "fp", token: "first", leaseMs: 60_000, ttlMs: 600_000 }),
        );
        expect((outcome as { rejected: unknown }).rejected).toBeInstanceOf(StoreError);
        expect(await read(key)).toBeNull();
        const again = await store.claim(key, {
          fingerprint: "fp",
          token: "second",
          leaseMs: 60_000,
          ttlMs: 600_000,
        });
        expect(again).toMatchObject({ status: "claimed", record: { token: "second" } });
      });
    },
  );
}

(service.skip ? describe.skip : describe)(
  "Redis faults, ioredis defaults: CLIENT KILL in the middle of a call",
  () => {
    it("the command is resent after ioredis reconnects and applies once: the call succeeds", async () => {
      const client = new Redis(service.url);
      const store = redisStore(client, { prefix });
      const key = `resent:${randomUUID()}`;
      const id = Number(await client.client("ID"));
      const outcome = await killMidCall(id, () =>
        store.claim(key, { fingerprint: "fp", token: "only", leaseMs: 60_000, ttlMs: 600_000 }),
      );
      expect(outcome).toMatchObject({ status: "claimed", record: { token: "only" } });
      expect(await read(key)).toMatchObject({ state: "pending", token: "only" });
      client.disconnect();
    });
  },
);
