import { once } from "node:events";
import type http from "node:http";
import express, { type NextFunction, type Request, type Response } from "express";
import { idempotency, markNoEffect } from "../../src/express/index.js";
import type { Store } from "../../src/store/types.js";
import { baseUrl, listen } from "./apps.js";

/** What the fake owner recorded, independently of the middleware. */
export interface OwnerLog {
  /** Each effect the handler took, in order. */
  readonly effects: { key: string; body: unknown }[];
  /**
   * Each request that reached the server (before the middleware), with its raw Idempotency-Key header and, once
   * answered, the status sent and whether it was a replay.
   */
  readonly attempts: { key: string | undefined; path: string; status?: number; replayed?: boolean }[];
}

/** What to do to the Nth attempt (1-based) carrying a given key. */
export type Fault =
  /** Run the handler and save its response, then destroy the socket instead of sending it. */
  | "drop-after-effect"
  /** Answer 503 before the middleware, without running anything. */
  | "unavailable"
  /**
   * Make the handler throw before taking effect, with an error that says so (`noEffect: true`): the error handler
   * marks its 500 with `markNoEffect`, so the middleware releases the key.
   */
  | "throw"
  /** Make the handler take effect and then throw: its 500 is saved and replayed, as any answer is. */
  | "throw-after-effect"
  /** Hold the handler until a later attempt with the same key has been answered. */
  | "slow"
  | undefined;

export interface LoopbackOwner {
  readonly url: string;
  readonly log: OwnerLog;
  close(): Promise<void>;
}

/**
 * A real owner on a loopback listener with a random port: Express, the idemkey middleware, and POST routes that
 * record an effect. `fault(attempt)` injects failures around the effect, by how many times the key was seen.
 */
export async function loopbackOwner(
  store: Store,
  fault: (attempt: number, key: string | undefined) => Fault,
  options: { maxResponseBytes?: number; padTo?: number } = {},
): Promise<LoopbackOwner> {
  const log: OwnerLog = { effects: [], attempts: [] };
  const seen = new Map<string, number>();
  const answered = new Map<string, () => void>();
  const app = express();

  app.use((req, res, next) => {
    const key = req.get("idempotency-key");
    const entry: OwnerLog["attempts"][number] = { key, path: req.path };
    log.attempts.push(entry);
    const attempt = (seen.get(key ?? "") ?? 0) + 1;
    seen.set(key ?? "", attempt);
    res.on("finish", () => {
      entry.status = res.statusCode;
      entry.replayed = res.getHeader("idempotent-replayed") === "true";
      answered.get(key ?? "")?.();
    });
    const action = fault(attempt, key);
    res.locals.fault = action;
    if (action === "unavailable") {
      res.status(503).json({ error: { message: "injected outage", type: "api_error" } });
      return;
    }
    if (action === "drop-after-effect") {
      // Installed before the middleware, so this `end` runs after the middleware saved the response.
      res.end = (() => {
        req.socket.destroy();
        return res;
      }) as unknown as typeof res.end;
    }
    next();
  });
  app.use(express.json(), express.urlencoded({ extended: true }));
  app.use(
    idempotency({
      store,
      scope: "single-tenant",
      onError: () => {},
      ...(options.maxResponseBytes === undefined ? {} : { maxResponseBytes: options.maxResponseBytes }),
    }),
  );
  app.post(["/charges", "/v1/charges"], async (req, res) => {
    const key = req.get("idempotency-key") ?? "";
    if (res.locals.fault === "throw") {
      throw Object.assign(new Error("injected failure before the effect"), { noEffect: true });
    }
    if (res.locals.fault === "slow") {
      await new Promise<void>((resolve) => answered.set(key, resolve));
      answered.delete(key);
    }
    log.effects.push({ key, body: req.body });
    if (res.locals.fault === "throw-after-effect") throw new Error("injected failure after the effect");
    const id = `ch_${log.effects.length}`;
    res
      .status(200)
      .json({ id, object: "charge", amount: Number(req.body.amount), currency: req.body.currency });
  });
  // Orb's customers.create, the shape a Stainless-generated SDK posts and reads back.
  app.post(["/customers", "/v1/customers"], (req, res) => {
    const key = req.get("idempotency-key") ?? "";
    log.effects.push({ key, body: req.body });
    const id = `cus_${log.effects.length}`;
    res
      .status(201)
      .json({ id, email: req.body.email, name: req.body.name, notes: "x".repeat(options.padTo ?? 0) });
  });
  // Express shows middleware no thrown error: its error handler says "nothing happened" for the middleware.
  app.use((error: Error & { noEffect?: boolean }, _req: Request, res: Response, _next: NextFunction) => {
    if (error.noEffect === true) markNoEffect(res);
    res.status(500).json({ error: { message: error.message, type: "api_error" } });
  });

  const server: http.Server = await listen(app);
  return {
    url: baseUrl(server),
    log,
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, "close");
    },
  };
}
