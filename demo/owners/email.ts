import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { Hono } from "hono";
import { TRACE_HEADER } from "../protocol.js";
import { type Env, faults, listen, requestLog } from "./http.js";
import type { Owner } from "./types.js";

/**
 * An email-like API that honours no key at all: `POST /messages` sends (records) a message every time it is asked.
 * `GET /messages?to&subject&text` lists the messages sent with that content, oldest first, which is how an agent
 * checks what happened to a message whose outcome it lost. Each task legitimately sends its message twice.
 */
export async function email(dir: string): Promise<Owner> {
  const db = new BetterSqlite3(join(dir, "email.db"));
  db.pragma("journal_mode = WAL");
  db.exec(`CREATE TABLE messages (
    id INTEGER PRIMARY KEY, recipient TEXT NOT NULL, subject TEXT NOT NULL, text TEXT NOT NULL, trace TEXT)`);
  const insert = db.prepare<[string, string, string, string | null], { id: number }>(
    "INSERT INTO messages (recipient, subject, text, trace) VALUES (?, ?, ?, ?) RETURNING id",
  );
  const find = db.prepare<[string, string, string], { id: number }>(
    "SELECT id FROM messages WHERE recipient = ? AND subject = ? AND text = ? ORDER BY id",
  );
  const app = new Hono<Env>();
  const log = requestLog(db);
  app.use(faults(log));
  app.post("/messages", async (c) => {
    const { to, subject, text } = (await c.req.json()) as Record<string, unknown>;
    if (typeof to !== "string" || typeof subject !== "string" || typeof text !== "string") {
      return c.json({ error: "to, subject and text are required strings" }, 400);
    }
    const { id } = insert.get(to, subject, text, c.req.header(TRACE_HEADER) ?? null)!;
    return c.json({ id: `msg_${id}` }, 201);
  });
  app.get("/messages", (c) => {
    const { to = "", subject = "", text = "" } = c.req.query();
    return c.json({ messages: find.all(to, subject, text).map((row) => ({ id: `msg_${row.id}` })) });
  });
  const server = await listen(app);
  return {
    name: "email",
    tool: "sendMessage",
    effect: "unguarded",
    url: server.url,
    expected: (tasks) => new Map(tasks.map((t) => [group(t.to, t.subject, t.text), 2])),
    effects: () =>
      db
        .prepare<[], { recipient: string; subject: string; text: string; trace: string | null }>(
          "SELECT recipient, subject, text, trace FROM messages ORDER BY id",
        )
        .all()
        .map((row) => ({ group: group(row.recipient, row.subject, row.text), trace: row.trace })),
    requests: () => log.counts(),
    async close() {
      await server.close();
      db.close();
    },
  };
}

const group = (to: string, subject: string, text: string) => JSON.stringify([to, subject, text]);
