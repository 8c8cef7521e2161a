import { existsSync } from "node:fs";
import { type Browser, chromium, type Page } from "playwright-core";

/** Debian's Chromium: browser tests drive it through playwright-core and never download a browser. */
export const CHROMIUM = "/usr/bin/chromium";

/**
 * Whether Chromium is there for the test named by `what`. Under CI=true its absence fails the run; elsewhere the
 * test is skipped and says so once.
 */
export function chromiumFor(what: string): boolean {
  if (existsSync(CHROMIUM)) return true;
  if (process.env.CI === "true")
    throw new Error(`CI=true requires Chromium at ${CHROMIUM} for ${what} (apt-get install chromium)`);
  console.warn(`SKIPPED ${what}: no Chromium at ${CHROMIUM} (apt-get install chromium).`);
  return false;
}

/** Headless, with the machine's closed network in mind: no background connections, no first-run work. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--no-first-run",
    ],
  });
}

/**
 * The inspector's page in a new headless Chromium, signed in with its token, with the page's console errors
 * collected in `errors`. Everything it starts is closed through `cleanup`.
 */
export async function openInspectorPage(
  served: { url: string; token: string },
  cleanup: (() => unknown)[],
): Promise<{ page: Page; errors: string[] }> {
  const browser = await launchChromium();
  cleanup.push(() => browser.close());
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  await page.goto(`${served.url}#token=${encodeURIComponent(served.token)}`);
  return { page, errors };
}
