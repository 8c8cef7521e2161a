import { appendFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Task } from "@a2a-js/sdk";
import { afterEach, describe, expect, it } from "vitest";
import { a2aTool } from "../../src/a2a/index.js";
import { createHarness } from "../../src/harness/create-harness.js";
import type { KeyList, KeySummary } from "../../src/inspector/owner-keys.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { memoryStore } from "../../src/store/memory.js";
import { serve } from "../inspector/support.js";
import { runCli } from "../support/cli.js";
import { startBookingAgent } from "./fixtures/booking-agent.js";
import { bookings, bookingText, clientFor } from "./support.js";

// The A2A executor's records (`a2a:`) are the owner's keys as the middleware's and mcpDedupe's are: the inspector
// lists them beside those, on its page, its API and `idemkey inspect --list`. The bookings are counted in the
// agent's own file.
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe("the inspector lists idempotentExecutor's keys", () => {
  it("a keyed message answered by a task: one a2a row, completed, with the task as the recorded answer", async () => {
    const dir = mkdtempSync(join(tmpdir(), "idemkey-a2a-inspector-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const effects = join(dir, "bookings.log");
    appendFileSync(effects, "");
    const db = join(dir, "agent.db");
    const store = sqliteStore(db);
    const server = await startBookingAgent({ effects, executor: { store, pollMs: 5 } });
    cleanups.push(server.close);
    const book = a2aTool(await clientFor(server.url), { name: "book", effect: "keyed" });
    const harness = createHarness({ store: memoryStore() });
    const task = (await harness.call("trip-9", book, { text: "table for four at 7" })) as Task;
    const [call] = await harness.list();
    expect(bookings(effects)).toHaveLength(1);

    const inspector = await serve({ store, redact: [] });
    cleanups.push(() => inspector.close());
    const list = (await (await inspector.get("/api/keys?kind=a2a")).json()) as KeyList;
    expect(list.total).toBe(1);
    const row = list.keys[0]!;
    expect(row).toMatchObject({ kind: "a2a", scope: '["",""]', key: call!.key, state: "completed" });
    const answer = (row.result as { a2aAnswer: { kind: string; data: Task } }).a2aAnswer;
    expect(answer.kind).toBe("task");
    expect(bookingText(answer.data)).toBe(bookingText(task));
    // The other kinds' filters leave it out; a kind the inspector does not know is refused, naming the parameter.
    expect(((await (await inspector.get("/api/keys?kind=mcp")).json()) as KeyList).total).toBe(0);
    const refused = await inspector.get("/api/keys?kind=smtp");
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ param: "kind", detail: "kind must be http, mcp or a2a" });
    await store.close();

    // The CLI lists it too, from the file alone, as one JSON line among the owner's keys.
    const cli = await runCli(["inspect", "--store", `sqlite:${db}`, "--list"]);
    expect(cli.stderr).toBe("");
    const lines = cli.stdout
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as KeySummary);
    expect(
      lines.filter((line) => line.kind === "a2a").map(({ key, state, tool }) => ({ key, state, tool })),
    ).toEqual([{ key: call!.key, state: "completed", tool: "a2a message" }]);
  });
});
