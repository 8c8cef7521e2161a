import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { getRequestListener, type HttpBindings } from "@hono/node-server";
import type BetterSqlite3 from "better-sqlite3";
import type { Hono, MiddlewareHandler } from "hono";
import { FAULT_HEADER, TRACE_HEADER } from "../protocol.js";

export type Env = { Bindings: HttpBindings };

export interface Listening {
  readonly url: string;
  close(): Promise<void>;
}

/** Serves a Hono app on a random free port of 127.0.0.1. */
export async function listen(app: Hono<Env>): Promise<Listening> {
  const server = http.createServer(getRequestListener(app.fetch));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, "close");
    },
  };
}

/** The owner's own record of the requests it received, kept beside its effects. */
export interface RequestLog {
  /** Logs a POST; returns a function that marks it as answered from a saved response (a replay). */
  add(row: RequestRow): () => void;
  /** How many POST requests arrived, and how many of them were answered from the record of their key. */
  counts(): { attempts: number; replays: number };
}

interface RequestRow {
  path: string;
  keyed: boolean;
  fault: string | null;
  trace: string | null;
}

export function requestLog(db: BetterSqlite3.Database): RequestLog {
  db.exec(`CREATE TABLE IF NOT EXISTS requests (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL, keyed INTEGER NOT NULL, fault TEXT, trace TEXT,
    replayed INTEGER NOT NULL DEFAULT 0)`);
  const insert = db.prepare<[string, number, string | null, string | null]>(
    "INSERT INTO requests (path, keyed, fault, trace) VALUES (?, ?, ?, ?)",
  );
  const replayed = db.prepare<[number | bigint]>("UPDATE requests SET replayed = 1 WHERE id = ?");
  const counts = db.prepare<[], { attempts: number; replays: number | null }>(
    "SELECT COUNT(*) AS attempts, SUM(replayed) AS replays FROM requests",
  );
  return {
    add(row) {
      const { lastInsertRowid } = insert.run(row.path, row.keyed ? 1 : 0, row.fault, row.trace);
      return () => replayed.run(lastInsertRowid);
    },
    counts() {
      const { attempts, replays } = counts.get()!;
      return { attempts, replays: replays ?? 0 };
    },
  };
}

/**
 * Mounted first, outside everything else: logs each POST, answers 503 before anything runs when told to, or lets
 * the request run to completion (the middleware saves its response, the handler commits) and then destroys the
 * socket, so that the client never hears of an effect that happened.
 */
export function faults(log: RequestLog): MiddlewareHandler<Env> {
  return async function faults(c, next) {
    if (c.req.method !== "POST") return next();
    const fault = c.req.header(FAULT_HEADER) ?? null;
    const replayed = log.add({
      path: c.req.path,
      keyed: c.req.header("idempotency-key") !== undefined,
      fault,
      trace: c.req.header(TRACE_HEADER) ?? null,
    });
    if (fault === "5xx") return c.json({ error: "injected outage: nothing was done" }, 503);
    await next();
    if (c.res.headers.get("idempotent-replayed") === "true") replayed();
    if (fault === "lost-response") c.env.incoming.socket.destroy();
  };
}
