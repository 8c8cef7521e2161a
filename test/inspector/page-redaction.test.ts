import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Hono } from "hono";
import { afterAll, describe, expect, it } from "vitest";
import { idempotency } from "../../src/hono/index.js";
import { serveInspector } from "../../src/inspector/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { chromiumFor, openInspectorPage } from "../support/chromium.js";

// The page in Chromium shows the owner's keys as the API sends them: a scope taken from an API key masked, and a
// token in a request's query masked, in the table's text and anywhere in the page. The keys are written by the
// real Hono middleware; the handler counts its runs itself.
const available = chromiumFor("the inspector page's redaction test");
const SCOPE = "sk_live_scope_page_51c0";
const TOKEN = "s3cr3t";
const dir = mkdtempSync(join(tmpdir(), "idemkey-inspector-page-redaction-"));
const cleanup: (() => unknown)[] = [];
afterAll(async () => {
  for (const step of cleanup.reverse()) await step();
  rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!available)("the inspector page masks the owner's keys", () => {
  it("shows the scope as [redacted] and /ok?token=[redacted]&x=1, and the page holds neither secret", async () => {
    const store = sqliteStore(join(dir, "ledger.db"));
    cleanup.push(() => store.close());
    let runs = 0;
    const app = new Hono();
    app.use("*", idempotency({ store, scope: (c) => c.req.header("x-api-key") ?? "" }));
    app.post("/ok", (c) => {
      runs++;
      return c.json({ ok: true }, 201);
    });
    const res = await app.request(`/ok?token=${TOKEN}&x=1`, {
      method: "POST",
      headers: { "idempotency-key": "k-1", "content-type": "application/json", "x-api-key": SCOPE },
      body: "{}",
    });
    expect(res.status).toBe(201);
    expect(runs).toBe(1);

    const served = await serveInspector({ store });
    cleanup.push(() => served.close());
    const { page, errors } = await openInspectorPage(served, cleanup);
    await page.waitForSelector("#keys-panel:not([hidden]) #keys tbody tr");
    const cells = (await page.locator("#keys tbody tr").first().locator("td").allTextContents()).map((t) =>
      t.trim(),
    );
    expect(cells.slice(0, 5)).toEqual([
      "HTTP",
      "[redacted]",
      "k-1",
      "completed",
      "POST /ok?token=[redacted]&x=1",
    ]);
    const html = await page.content();
    expect(html).not.toContain(TOKEN);
    expect(html).not.toContain(SCOPE);
    expect(errors).toEqual([]);
  }, 60_000);
});
