import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  makeIdempotent,
} from "@aws-lambda-powertools/idempotency";
import { CachePersistenceLayer } from "@aws-lambda-powertools/idempotency/cache";
import { Idempotency, IdempotencyError, IdempotencyErrorCodes } from "@node-idempotency/core";
import { MemoryStorageAdapter } from "@node-idempotency/storage-adapter-memory";
import { RedisStorageAdapter } from "@node-idempotency/storage-adapter-redis";
import type express from "express";
import expressIdempotencyModule from "express-idempotency";
import redisAdapterModule from "express-idempotency-redis-adapter";
import { Redis } from "ioredis";
import { createClient } from "redis";
import { idempotency } from "../src/express/index.js";
import { redisStore } from "../src/redis/index.js";
import { memoryStore } from "../src/store/memory.js";
import type { HandlerRuns } from "./server-process.js";
import { REDIS_URL } from "./services.js";

/** The handler's own count of its runs the server reports, with the runs of each duplicate key. */
export interface PeerRuns extends HandlerRuns {
  byKey: Record<string, number>;
}

export const PEER_PATH = "/charges";
/** Keys the bench completes before timing and replays, and keys it sends as concurrent duplicates. */
export const REPLAY_MARK = "replay-";
export const DUPLICATE_MARK = "dup-";

/** The request body every contender gets, and what the handler answers. */
export interface Charge {
  amount: number;
  currency: string;
}
/** The handler under test: counts its run, does its work, returns the charge. */
export type Run = (body: Charge, key: string | undefined) => Promise<Record<string, unknown>>;

/** One library on one store, mounted in front of the same handler on an Express app. */
export interface Peer {
  library: string;
  store: "-" | "memory" | "Redis";
  /** Mounts the route on `app` at `path`; every key it writes starts with `prefix`. Resolves to its closer. */
  mount(app: express.Express, path: string, run: Run, prefix: string): Promise<() => Promise<void>>;
}

/** The earlier idemkey the driver bundled (IDEMKEY_BENCH_BEFORE_MODULE), with today's API shapes. */
async function earlier(): Promise<{
  idempotency: typeof idempotency;
  redisStore: typeof redisStore;
  memoryStore: typeof memoryStore;
}> {
  const module = process.env.IDEMKEY_BENCH_BEFORE_MODULE;
  if (module === undefined) throw new Error("peers: IDEMKEY_BENCH_BEFORE_MODULE is not set");
  return await import(module);
}

const keyOf = (req: express.Request) => req.get("idempotency-key");
const answer = (run: Run) => async (req: express.Request, res: express.Response) => {
  res.status(201).json(await run(req.body as Charge, keyOf(req)));
};

// Both are CommonJS: the module object under ESM, or its default export.
const expressIdempotency = expressIdempotencyModule as unknown as typeof import("express-idempotency");
const RedisAdapter = ((redisAdapterModule as unknown as { default?: unknown }).default ??
  redisAdapterModule) as unknown as typeof redisAdapterModule.default;

/**
 * `@node-idempotency/core` is framework-free: this is the Express glue its docs describe (onRequest before the
 * handler, onResponse with its result before the answer), the least a user would write.
 */
function nodeIdempotencyRoute(idem: Idempotency, run: Run) {
  return async (req: express.Request, res: express.Response) => {
    const request = {
      headers: req.headers as Record<string, unknown>,
      path: req.path,
      method: req.method,
      body: req.body as Record<string, unknown>,
    };
    let cached: { body?: unknown; additional?: Record<string, unknown> } | undefined;
    try {
      cached = await idem.onRequest(request);
    } catch (error) {
      if (!(error instanceof IdempotencyError)) throw error;
      const status = error.code === IdempotencyErrorCodes.REQUEST_IN_PROGRESS ? 409 : 422;
      res.status(status).json({ error: error.code });
      return;
    }
    if (cached !== undefined) {
      res.status(Number(cached.additional?.status ?? 200)).json(cached.body);
      return;
    }
    const body = await run(req.body as Charge, keyOf(req));
    await idem.onResponse(request, { body, additional: { status: 201 } });
    res.status(201).json(body);
  };
}

/** Powertools outside Lambda: a remaining time, as bench/powertools.ts gives it (30 s, idemkey's default lease). */
function powertoolsConfig(): IdempotencyConfig {
  const config = new IdempotencyConfig({ eventKeyJmesPath: "key" });
  config.registerLambdaContext({ getRemainingTimeInMillis: () => 30_000 } as Parameters<
    IdempotencyConfig["registerLambdaContext"]
  >[0]);
  return config;
}

export const PEERS: Record<string, Peer> = {
  bare: {
    library: "no idempotency",
    store: "-",
    async mount(app, path, run) {
      app.post(path, answer(run));
      return async () => {};
    },
  },
  "idemkey-memory": {
    library: "idemkey",
    store: "memory",
    async mount(app, path, run) {
      app.post(path, idempotency({ store: memoryStore(), scope: "single-tenant" }), answer(run));
      return async () => {};
    },
  },
  "idemkey-redis": {
    library: "idemkey",
    store: "Redis",
    async mount(app, path, run, prefix) {
      const client = new Redis(REDIS_URL);
      const store = redisStore(client, { prefix: `${prefix}idemkey:` });
      app.post(path, idempotency({ store, scope: "single-tenant" }), answer(run));
      return async () => void client.disconnect();
    },
  },
  // The same store on node-redis, the client every peer's Redis adapter uses: ioredis spends more per command.
  "idemkey-redis-node": {
    library: "idemkey (node-redis)",
    store: "Redis",
    async mount(app, path, run, prefix) {
      const client = createClient({ url: REDIS_URL });
      await client.connect();
      const store = redisStore(client, { prefix: `${prefix}idemkey-node:` });
      app.post(path, idempotency({ store, scope: "single-tenant" }), answer(run));
      return async () => void (await client.quit());
    },
  },
  // IDEMKEY_BENCH_BEFORE: idemkey as an earlier commit had it (see peers.ts), beside today's in the same rounds.
  "idemkey-before-memory": {
    library: "idemkey before",
    store: "memory",
    async mount(app, path, run) {
      const before = await earlier();
      app.post(
        path,
        before.idempotency({ store: before.memoryStore(), scope: "single-tenant" }),
        answer(run),
      );
      return async () => {};
    },
  },
  "idemkey-before-redis": {
    library: "idemkey before",
    store: "Redis",
    async mount(app, path, run, prefix) {
      const before = await earlier();
      const client = new Redis(REDIS_URL);
      const store = before.redisStore(client, { prefix: `${prefix}idemkey-before:` });
      app.post(path, before.idempotency({ store, scope: "single-tenant" }), answer(run));
      return async () => void client.disconnect();
    },
  },
  "express-idempotency-memory": {
    library: "express-idempotency",
    store: "memory",
    async mount(app, path, run) {
      app.post(path, expressIdempotency.idempotency(), async (req, res) => {
        // Its documented use: the middleware answered a hit already, the handler must check and return.
        if (expressIdempotency.getSharedIdempotencyService().isHit(req)) return;
        await answer(run)(req, res);
      });
      return async () => {};
    },
  },
  "express-idempotency-redis": {
    library: "express-idempotency",
    store: "Redis",
    async mount(app, path, run) {
      // It keeps the Idempotency-Key as the Redis key: the bench's keys carry the run's prefix already.
      const dataAdapter = new RedisAdapter({ connectionConfig: { url: REDIS_URL } });
      await dataAdapter.connect();
      app.post(path, expressIdempotency.idempotency({ dataAdapter }), async (req, res) => {
        if (expressIdempotency.getSharedIdempotencyService().isHit(req)) return;
        await answer(run)(req, res);
      });
      return () => dataAdapter.disconnect();
    },
  },
  "node-idempotency-memory": {
    library: "@node-idempotency/core",
    store: "memory",
    async mount(app, path, run, prefix) {
      const idem = new Idempotency(new MemoryStorageAdapter(), { cacheKeyPrefix: `${prefix}node` });
      app.post(path, nodeIdempotencyRoute(idem, run));
      return async () => {};
    },
  },
  "node-idempotency-redis": {
    library: "@node-idempotency/core",
    store: "Redis",
    async mount(app, path, run, prefix) {
      const storage = new RedisStorageAdapter({ url: REDIS_URL });
      await storage.connect();
      const idem = new Idempotency(storage, { cacheKeyPrefix: `${prefix}node` });
      app.post(path, nodeIdempotencyRoute(idem, run));
      return () => storage.disconnect();
    },
  },
  "powertools-redis": {
    library: "Powertools makeIdempotent",
    store: "Redis",
    async mount(app, path, run, prefix) {
      const client = createClient({ url: REDIS_URL });
      await client.connect();
      const charge = makeIdempotent(
        async (event: { key: string | undefined; body: Charge }) => run(event.body, event.key),
        {
          persistenceStore: new CachePersistenceLayer({ client }),
          config: powertoolsConfig(),
          keyPrefix: `${prefix}powertools`,
        },
      );
      app.post(path, async (req, res) => {
        try {
          res.status(201).json(await charge({ key: keyOf(req), body: req.body as Charge }));
        } catch (error) {
          if (!(error instanceof IdempotencyAlreadyInProgressError)) throw error;
          res.status(409).json({ error: "in progress" });
        }
      });
      return async () => void (await client.quit());
    },
  },
};
