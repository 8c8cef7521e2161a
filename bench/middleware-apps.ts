import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import express from "express";
import Fastify from "fastify";
import { type Context, Hono } from "hono";
import { idempotency as expressIdempotency } from "../src/express/index.js";
import { idempotency as fastifyIdempotency } from "../src/fastify/index.js";
import { idempotency as honoIdempotency } from "../src/hono/index.js";
import type { Store } from "../src/store/types.js";
import { realisticWork } from "./middleware-handler.js";

export const FRAMEWORKS = ["hono", "express", "fastify"] as const;
export type Framework = (typeof FRAMEWORKS)[number];

/**
 * The path of the handler behind the middleware on one store (`undefined`: the bare handler); `real` is the
 * realistic handler (~200 µs of CPU work and one SQLite INSERT) instead of the trivial one.
 */
export const chargesPath = (slug: string | undefined, real = false) =>
  `/${slug === undefined ? "bare" : `idem/${slug}`}${real ? "/real" : ""}/charges`;

interface Charge {
  amount: number;
  currency: string;
}

/** The prefix of the keys the benchmark completes before timing and then replays (with `real-` before it). */
export const REPLAY_PREFIX = "replay-";
const isReplayKey = (key: string | undefined) =>
  key !== undefined && (key.startsWith(REPLAY_PREFIX) || key.startsWith(`real-${REPLAY_PREFIX}`));

let runs = 0;
let replayRuns = 0;
/**
 * How many times the handler ran, counted by the handler itself, and how many of those under a replay key: after
 * its first run, a replay key reaching the handler is a repeated effect, whatever the timing (a request autocannon
 * cut off may reach the handler late, but under a fresh key).
 */
export const handlerRuns = () => ({ runs, replayRuns });
const counted = (key: string | undefined) => {
  runs++;
  if (isReplayKey(key)) replayRuns++;
};
const charge = (body: Charge, key: string | undefined) => {
  counted(key);
  return { id: `ch_${runs}`, amount: body.amount, currency: body.currency, status: "succeeded" };
};
let work: ReturnType<typeof realisticWork> | undefined;
const realCharge = (body: Charge, key: string | undefined) => {
  counted(key);
  work ??= realisticWork();
  const id = work.charge(body.amount, body.currency);
  return { id: `ch_${id}`, amount: body.amount, currency: body.currency, status: "succeeded" };
};
/** Removes the realistic handler's own database. */
export const closeWork = () => work?.close();

type Listening = { port: number; close: () => Promise<void> };

/** Each framework's app: one handler, bare and behind one idemkey middleware per store (by slug). */
export const apps: Record<Framework, (stores: Map<string, Store>) => Promise<Listening>> = {
  async hono(stores) {
    const app = new Hono();
    const key = (c: Context) => c.req.header("idempotency-key");
    const createCharge = async (c: Context) => c.json(charge(await c.req.json<Charge>(), key(c)), 201);
    const createRealCharge = async (c: Context) =>
      c.json(realCharge(await c.req.json<Charge>(), key(c)), 201);
    app.post(chargesPath(undefined), createCharge);
    app.post(chargesPath(undefined, true), createRealCharge);
    for (const [slug, store] of stores) {
      const middleware = honoIdempotency({ store, scope: "single-tenant" });
      app.post(chargesPath(slug), middleware, createCharge);
      app.post(chargesPath(slug, true), middleware, createRealCharge);
    }
    let server!: ReturnType<typeof serve>;
    const port = await new Promise<number>((resolve) => {
      server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info: AddressInfo) =>
        resolve(info.port),
      );
    });
    return { port, close: async () => void server.close() };
  },
  async express(stores) {
    const app = express();
    const createCharge = (req: express.Request, res: express.Response) => {
      res.status(201).json(charge(req.body as Charge, req.get("idempotency-key")));
    };
    const createRealCharge = (req: express.Request, res: express.Response) => {
      res.status(201).json(realCharge(req.body as Charge, req.get("idempotency-key")));
    };
    app.post(chargesPath(undefined), express.json(), createCharge);
    app.post(chargesPath(undefined, true), express.json(), createRealCharge);
    for (const [slug, store] of stores) {
      const middleware = expressIdempotency({ store, scope: "single-tenant" });
      app.post(chargesPath(slug), express.json(), middleware, createCharge);
      app.post(chargesPath(slug, true), express.json(), middleware, createRealCharge);
    }
    const server: Server = await new Promise((resolve) => {
      const listening = app.listen(0, "127.0.0.1", () => resolve(listening));
    });
    return { port: (server.address() as AddressInfo).port, close: async () => void server.close() };
  },
  async fastify(stores) {
    const app = Fastify({ logger: false });
    type Request = { body: unknown; headers: Record<string, string | string[] | undefined> };
    const key = (request: Request) => {
      const value = request.headers["idempotency-key"];
      return typeof value === "string" ? value : undefined;
    };
    const createCharge = async (request: Request, reply: { code(status: number): unknown }) => {
      reply.code(201);
      return charge(request.body as Charge, key(request));
    };
    const createRealCharge = async (request: Request, reply: { code(status: number): unknown }) => {
      reply.code(201);
      return realCharge(request.body as Charge, key(request));
    };
    app.post(chargesPath(undefined), createCharge);
    app.post(chargesPath(undefined, true), createRealCharge);
    // The plugin applies to the context it is registered in: one child context per store keeps each to its route.
    for (const [slug, store] of stores) {
      await app.register(async (child) => {
        await child.register(fastifyIdempotency({ store, scope: "single-tenant" }));
        child.post(chargesPath(slug), createCharge);
        child.post(chargesPath(slug, true), createRealCharge);
      });
    }
    await app.listen({ port: 0, host: "127.0.0.1" });
    return { port: (app.server.address() as AddressInfo).port, close: () => app.close() };
  },
};
