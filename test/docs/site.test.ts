import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { extname, join, normalize } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumFor, launchChromium } from "../support/chromium.js";

/**
 * The documentation site as a reader gets it: `npm run docs` builds it (VitePress and TypeDoc, offline) into a
 * temporary folder, a static server serves it on loopback, and Debian's Chromium reads every page reachable from the
 * home page: no console error on any, every internal link and anchor resolves, and the local search finds
 * `effectOnce`.
 */
const available = chromiumFor("the docs site's browser test");

const root = new URL("../..", import.meta.url).pathname;
const out = mkdtempSync(join(tmpdir(), "idemkey-site-"));
let server: Server | undefined;
let browser: Browser | undefined;
let origin = "";
afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  rmSync(out, { recursive: true, force: true });
});

const TYPES: Record<string, string> = {
  ".html": "text/html",
  ".js": "text/javascript",
  ".css": "text/css",
  ".json": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".woff2": "font/woff2",
};

function serve(dir: string): Promise<string> {
  server = createServer((req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname));
    let file = join(dir, path);
    if (existsSync(file) && statSync(file).isDirectory()) file = join(file, "index.html");
    if (!file.startsWith(dir) || !existsSync(file)) {
      res.writeHead(404).end("not found");
      return;
    }
    res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" });
    res.end(readFileSync(file));
  });
  return new Promise((resolve) =>
    server!.listen(0, "127.0.0.1", () =>
      resolve(`http://127.0.0.1:${(server!.address() as AddressInfo).port}`),
    ),
  );
}

describe.skipIf(!available)("the documentation site in Chromium", () => {
  beforeAll(async () => {
    const built = spawnSync(process.execPath, ["scripts/docs.mjs", "--out", out], {
      cwd: root,
      encoding: "utf8",
    });
    expect(built.status, `${built.stdout}\n${built.stderr}`).toBe(0);
    origin = await serve(out);
    browser = await launchChromium();
  }, 240_000);

  it("every page reachable from the home page loads without a console error, and every internal link resolves", async () => {
    const page = await browser!.newPage();
    const errors: string[] = [];
    page.on("console", (message) => {
      if (message.type() === "error") errors.push(`${page.url()}: ${message.text()}`);
    });
    page.on("pageerror", (error) => errors.push(`${page.url()}: ${error.message}`));
    const seen = new Set<string>();
    const queue = ["/"];
    const broken: string[] = [];
    const ids = new Map<string, Set<string>>();
    const wanted: { from: string; path: string; id: string }[] = [];
    while (queue.length > 0) {
      const path = queue.shift()!;
      if (seen.has(path)) continue;
      seen.add(path);
      const answer = await page.goto(origin + path);
      if (answer?.status() !== 200) {
        broken.push(`${path}: ${answer?.status()}`);
        continue;
      }
      // The API reference is TypeDoc's own site: its pages are checked to exist, not crawled.
      if (path.startsWith("/api/")) continue;
      ids.set(path, new Set(await page.$$eval("[id]", (nodes) => nodes.map((node) => node.id))));
      const links = await page.$$eval("a[href]", (anchors) =>
        anchors.map((a) => (a as unknown as { href: string }).href),
      );
      for (const link of links) {
        const url = new URL(link);
        if (url.origin !== origin) continue;
        if (url.hash.length > 1)
          wanted.push({ from: path, path: url.pathname, id: decodeURIComponent(url.hash.slice(1)) });
        if (!seen.has(url.pathname)) queue.push(url.pathname);
      }
    }
    for (const { from, path, id } of wanted) {
      if (!path.startsWith("/api/") && ids.has(path) && !ids.get(path)!.has(id))
        broken.push(`${from} -> ${path}#${id}`);
    }
    expect(broken).toEqual([]);
    expect(errors).toEqual([]);
    expect(seen.size).toBeGreaterThan(30);
    for (const path of [
      "/guide/getting-started.html",
      "/integrations/mcp.html",
      "/stores/sqlite.html",
      "/api/index.html",
    ]) {
      expect([...seen]).toContain(path);
    }
    await page.close();
  }, 240_000);

  it("the local search finds effectOnce", async () => {
    const page = await browser!.newPage();
    await page.goto(`${origin}/`);
    await page.click(".VPNavBarSearch button");
    await page.fill(".VPLocalSearchBox input", "effectOnce");
    const results = page.locator(".VPLocalSearchBox .result");
    await results.first().waitFor({ timeout: 30_000 });
    const texts = await results.allTextContents();
    expect(texts.some((text) => /effectOnce/.test(text))).toBe(true);
    await page.close();
  }, 120_000);
});
