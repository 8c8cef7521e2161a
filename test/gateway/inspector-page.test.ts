import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { httpGateway } from "../../src/gateway/index.js";
import { serveInspector } from "../../src/inspector/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { chromiumFor, openInspectorPage } from "../support/chromium.js";
import { effectServer, tempRuns } from "./support.js";

// The inspector's page in Chromium shows the keys the HTTP gateway recorded in front of Python's http.server: a
// completed one and one whose upstream died mid-request, as outcome unknown.
const available = chromiumFor("the inspector page's owner keys test");
const runs = tempRuns("idemkey-gateway-page-");
const cleanup: (() => unknown)[] = [];
afterAll(async () => {
  for (const step of cleanup.reverse()) await step();
});

describe.skipIf(!available)("the inspector page lists the gateway's keys", () => {
  it("a completed key and an unknown outcome, in the owner keys table", async () => {
    const run = runs.next();
    const upstream = await effectServer(run);
    const store = sqliteStore(join(run, "gateway.db"));
    cleanup.push(() => store.close());
    const gateway = await httpGateway({
      upstream: upstream.url,
      store,
      scopeHeader: "x-api-key",
    });
    cleanup.push(() => gateway.close());
    const post = (path: string, key: string) =>
      fetch(gateway.url + path, {
        method: "POST",
        headers: { "idempotency-key": key, "content-type": "application/json", "x-api-key": "alice" },
        body: "{}",
      });
    expect((await post("/slow", "k-done")).status).toBe(201);
    expect((await post("/die", "k-died")).status).toBe(502);

    const served = await serveInspector({ store, redact: [] });
    cleanup.push(() => served.close());
    const { page, errors } = await openInspectorPage(served, cleanup);
    await page.waitForSelector("#keys-panel:not([hidden]) #keys tbody tr:nth-child(2)");
    // One cell's text at a time: the test's own types have no DOM.
    const rows: string[][] = [];
    for (const tr of await page.locator("#keys tbody tr").all()) {
      rows.push((await tr.locator("td").allTextContents()).map((text) => text.trim()));
    }
    expect(rows.map((cells) => [cells[0], cells[1], cells[2], cells[3], cells[4], cells[5]])).toEqual([
      ["HTTP", "alice", "k-died", "outcome unknown", "POST /die", "unknown: never sent again"],
      ["HTTP", "alice", "k-done", "completed", "POST /slow", "201"],
    ]);
    expect(errors).toEqual([]);
  });
});
