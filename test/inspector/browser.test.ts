import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, chromium } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { runChaos } from "../../demo/run.js";
import { createHarness, defineTool, OutcomeUnknownError, WaitTimeoutError } from "../../src/index.js";
import { openStore, type ServedInspector, serveInspector } from "../../src/inspector/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";

/**
 * The inspector in a real browser: Debian's Chromium driven by playwright-core (never a downloaded browser), over a
 * SQLite ledger filled by a short demo run plus calls of this test's own agent, one of them parked for approval
 * while its harness.call waits. Approving it on the page must let that call run, once, as the tool's own effects
 * file records. Takes the README's screenshot: into .tmp/inspector.png, or docs/inspector.png with
 * IDEMKEY_UPDATE_SCREENSHOT=1, so that an ordinary test run leaves the committed picture alone.
 */
const CHROMIUM = "/usr/bin/chromium";
const available = existsSync(CHROMIUM);
if (!available) {
  if (process.env.CI === "true") {
    throw new Error(
      `CI=true requires Chromium at ${CHROMIUM} for the inspector's browser test (apt-get install chromium)`,
    );
  }
  console.warn(
    `SKIPPED the inspector's browser test: no Chromium at ${CHROMIUM}. Install Debian's chromium ` +
      "(apt-get install chromium) to run it; under CI=true this fails the run.",
  );
}

const SCREENSHOT = fileURLToPath(
  new URL(
    process.env.IDEMKEY_UPDATE_SCREENSHOT === "1" ? "../../docs/inspector.png" : "../../.tmp/inspector.png",
    import.meta.url,
  ),
);
const dir = mkdtempSync(join(tmpdir(), "idemkey-inspector-browser-"));
const cleanup: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
  for (const step of cleanup.reverse()) await step();
  rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!available)("the inspector page in Chromium", () => {
  it("lists a demo run's calls, approves a parked call, and the waiting harness.call completes once", async () => {
    // 1. A short demo run keeps its SQLite ledger.
    const report = await runChaos({
      tasks: 3,
      workers: 2,
      seed: 7,
      modes: ["idemkey"],
      keep: join(dir, "demo"),
    });
    expect(report.problems).toEqual([]);
    const ledger = report.kept!;

    // 2. This test's agent on the same ledger: its deploy tool needs approval and writes its effects to a file.
    const effects = join(dir, "effects.jsonl");
    const agentStore = sqliteStore(ledger);
    cleanup.push(() => agentStore.close());
    const deploy = defineTool({
      name: "deployRelease",
      effect: "keyed",
      requiresApproval: true,
      run: (args: { service: string; version: string; apiToken: string }, ctx) => {
        appendFileSync(effects, `${JSON.stringify({ key: ctx.idempotencyKey, service: args.service })}\n`);
        return {
          service: args.service,
          version: args.version,
          url: `https://deploys.acme.test/${args.service}`,
        };
      },
    });
    const notify = defineTool({
      name: "pageOncall",
      effect: "unguarded",
      run: (): { id: string } => {
        throw new Error("socket hang up after the request was written");
      },
    });
    const task = "task-release-2.4";
    const apiArgs = { service: "api", version: "2.4.0", apiToken: "tok_live_should_never_show" };
    const webArgs = { service: "web", version: "2.4.0", apiToken: "tok_live_should_never_show" };
    const waitingHarness = createHarness({
      store: agentStore,
      approvalTimeoutMs: 120_000,
      wait: { minDelayMs: 20, maxDelayMs: 200 },
    });
    const quickHarness = createHarness({ store: agentStore, approvalTimeoutMs: 0, retry: { retries: 0 } });
    const key = waitingHarness.key(task, deploy, apiArgs);
    const waiting = waitingHarness.call(task, deploy, apiArgs);
    await expect(quickHarness.call(task, deploy, webArgs)).rejects.toBeInstanceOf(WaitTimeoutError);
    await expect(quickHarness.call(task, notify, {})).rejects.toBeInstanceOf(OutcomeUnknownError);
    while ((await waitingHarness.get(key))?.state !== "awaiting_approval")
      await new Promise((r) => setTimeout(r, 20));

    // 3. The inspector opens the ledger from its URL, as `idemkey inspect --store sqlite:<path>` does.
    const opened = await openStore(`sqlite:${ledger}`);
    cleanup.push(() => opened.close());
    const served: ServedInspector = await serveInspector({
      store: opened.store,
      label: `sqlite:${ledger}`,
      user: "ci",
    });
    cleanup.push(() => served.close());
    const everyKey = (await agentStore.list({ prefix: "call:", limit: 1000 }))
      .map((r) => r.key.slice(5))
      .sort();
    expect(everyKey.length).toBeGreaterThan(10);

    // 4. Chromium, offline: every request the page makes must go to the inspector itself.
    const browser: Browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
    });
    cleanup.push(() => browser.close());
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    const requests: string[] = [];
    const errors: string[] = [];
    page.on("request", (r) => requests.push(r.url()));
    page.on("pageerror", (e) => errors.push(e.message));
    page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
    await page.goto(`${served.url}#token=${served.token}`);

    // Every call in the ledger is listed, the parked one with its Approve button.
    await page.waitForSelector(
      `tr[data-key="${key}"][data-state="awaiting_approval"] button[data-action="approve"]`,
    );
    const listed = (
      await page
        .locator("tbody tr[data-key]")
        .evaluateAll((rows) => rows.map((r) => r.getAttribute("data-key")))
    ).sort();
    expect(listed).toEqual(everyKey);
    for (const tool of ["openPullRequest", "createCharge", "sendMessage", "deployRelease", "pageOncall"]) {
      await expect.poll(() => page.locator("tbody td b", { hasText: tool }).count()).toBeGreaterThan(0);
    }
    // This test's two, and the refund the demo's --keep leaves parked for the inspector.
    expect(await page.locator('#counts [data-state="awaiting_approval"] b').textContent()).toBe("3");
    // The token left the address bar at once.
    expect(new URL(page.url()).hash).toBe("");

    // 5. Approve it as "ana (on call)".
    await page.fill("#by", "ana (on call)");
    await page.click(`tr[data-key="${key}"] button[data-action="approve"]`);
    await page.waitForSelector("#dlg[open] #dlg-approve");
    expect(await page.locator("#dlg-body pre").textContent()).toContain('"apiToken": "[redacted]"');
    await page.click("#dlg-approve");

    // The agent's waiting call runs the tool, once, and returns its result.
    expect(await waiting).toEqual({ service: "api", version: "2.4.0", url: "https://deploys.acme.test/api" });
    const ran = readFileSync(effects, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(ran).toEqual([{ key, service: "api" }]);
    const entry = await waitingHarness.get(key);
    expect(entry?.state).toBe("completed");
    expect(entry?.events.at(-1)).toMatchObject({ type: "approved", by: "ana (on call)" });

    // The page sees it complete through its live updates, with the detail and the task's timeline open.
    await page.waitForSelector(`tr[data-key="${key}"][data-state="completed"]`);
    await page.waitForSelector(`#timeline svg g.row[data-key="${key}"]`);
    expect(await page.locator("#timeline svg g.row").count()).toBe(3);
    expect(await page.locator("#detail").textContent()).toContain("approved by ana (on call)");
    expect(await page.content()).not.toContain("tok_live_should_never_show");

    // 6. The README's screenshot, once the toast has faded.
    await page.waitForSelector("#toast:not(.on)", { state: "attached" });
    await page.mouse.move(0, 0);
    mkdirSync(join(SCREENSHOT, ".."), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });

    const origin = new URL(served.url).origin;
    expect(requests.filter((url) => !url.startsWith(origin))).toEqual([]);
    expect(errors).toEqual([]);

    // 7. --read-only: the same ledger, the parked web deploy listed, and no action offered anywhere.
    const readOnly = await serveInspector({ store: opened.store, readOnly: true });
    cleanup.push(() => readOnly.close());
    const webKey = waitingHarness.key(task, deploy, webArgs);
    const viewer = await browser.newPage();
    await viewer.goto(readOnly.url);
    await viewer.waitForSelector(`tr[data-key="${webKey}"][data-state="awaiting_approval"]`);
    await viewer.click(`tr[data-key="${webKey}"]`);
    await viewer.waitForSelector("#detail-panel:not([hidden])");
    expect(await viewer.locator("button[data-action]").count()).toBe(0);
    expect(await viewer.locator("#ro").isVisible()).toBe(true);
    expect(await viewer.locator("#who").isVisible()).toBe(false);
  }, 120_000);
});
