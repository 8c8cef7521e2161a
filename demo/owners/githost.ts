import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { Hono } from "hono";
import { idempotency } from "../../src/hono/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { TRACE_HEADER } from "../protocol.js";
import { type Env, faults, listen, requestLog } from "./http.js";
import type { Owner } from "./types.js";

/**
 * A git-host-like API: `POST /pulls` opens a pull request, behind idemkey's Idempotency-Key middleware (Hono) on
 * its own SQLite file. The middleware is mounted with `required: false`, so that the keyless modes still reach
 * the handler, unprotected, as they would reach a real API. Nothing else stops a second pull request for the same
 * branch: one per (repo, head) is the expectation the report checks.
 */
export async function gitHost(dir: string): Promise<Owner> {
  const db = new BetterSqlite3(join(dir, "githost.db"));
  const store = sqliteStore(db);
  db.exec(`CREATE TABLE pulls (
    number INTEGER PRIMARY KEY, repo TEXT NOT NULL, head TEXT NOT NULL, title TEXT NOT NULL, trace TEXT)`);
  const insert = db.prepare<[string, string, string, string | null], { number: number }>(
    "INSERT INTO pulls (repo, head, title, trace) VALUES (?, ?, ?, ?) RETURNING number",
  );
  const app = new Hono<Env>();
  const log = requestLog(db);
  app.use(faults(log));
  app.use("/pulls", idempotency({ store, scope: "single-tenant", required: false, onError: () => {} }));
  app.post("/pulls", async (c) => {
    const body = (await c.req.json()) as { repo?: unknown; head?: unknown; title?: unknown };
    const { repo, head, title } = body;
    if (typeof repo !== "string" || typeof head !== "string" || typeof title !== "string") {
      return c.json({ error: "repo, head and title are required strings" }, 400);
    }
    const { number } = insert.get(repo, head, title, c.req.header(TRACE_HEADER) ?? null)!;
    return c.json({ number, url: `https://git.example/${repo}/pull/${number}`, title }, 201);
  });
  const server = await listen(app);
  return {
    name: "git host",
    tool: "openPullRequest",
    effect: "keyed",
    url: server.url,
    expected: (tasks) => new Map(tasks.map((t) => [group(t.repo, t.head), 1])),
    effects: () =>
      db
        .prepare<[], { repo: string; head: string; trace: string | null }>(
          "SELECT repo, head, trace FROM pulls ORDER BY number",
        )
        .all()
        .map((row) => ({ group: group(row.repo, row.head), trace: row.trace })),
    requests: () => log.counts(),
    async close() {
      await server.close();
      await store.close();
      if (db.open) db.close();
    },
  };
}

const group = (repo: string, head: string) => `${repo} ${head}`;
