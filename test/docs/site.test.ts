import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { extname, join, normalize } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkSite } from "../../scripts/check-links.mjs";
import { docsPages } from "../packaging/readme-blocks.js";
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

// One build for both suites: TypeDoc's Markdown, then VitePress (scripts/docs.mjs), offline.
let built = { status: null as number | null, output: "" };
beforeAll(() => {
  const run = spawnSync(process.execPath, ["scripts/docs.mjs", "--out", out], {
    cwd: root,
    encoding: "utf8",
  });
  built = { status: run.status, output: `${run.stdout}\n${run.stderr}` };
}, 600_000);

/** Every page's link in the site's navigation (the sidebar and the nav bar of docs/.vitepress/config.ts). */
async function navigationLinks(): Promise<Set<string>> {
  const { default: config } = (await import("../../docs/.vitepress/config.js")) as {
    default: { themeConfig: { nav: Item[]; sidebar: Item[] } };
  };
  type Item = { link?: string; items?: Item[] };
  const links = new Set<string>();
  const walk = (items: Item[]) => {
    for (const item of items) {
      if (item.link) links.add(item.link.replace(/\.(md|html)$/, "").replace(/\/index$/, "/"));
      walk(item.items ?? []);
    }
  };
  walk(config.themeConfig.nav);
  walk(config.themeConfig.sidebar);
  return links;
}

describe("the documentation site's links, read from its HTML", () => {
  it("builds: the API reference as Markdown inside the VitePress site, with no dead link between pages", () => {
    expect(built.status, built.output).toBe(0);
    expect(existsSync(join(out, "api/index.html"))).toBe(true);
    expect(existsSync(join(out, "api/src/sqlite.html"))).toBe(true);
    // One theme: the API pages are VitePress pages, with the guide's navigation in them.
    const api = readFileSync(join(out, "api/src/sqlite.html"), "utf8");
    expect(api).toContain("VPSidebar");
    expect(api).toContain('href="/guide/getting-started.html"');
  });

  it("every internal link and anchor resolves, and every page is reachable from the home page", () => {
    const { pages, links, broken, unreached } = checkSite(out);
    expect(broken).toEqual([]);
    expect(unreached).toEqual([]);
    expect(pages).toBeGreaterThan(60);
    expect(links).toBeGreaterThan(1000);
  });

  it("every page of docs/ (the API reference's included) is in the navigation", async () => {
    const nav = await navigationLinks();
    const pages = docsPages()
      .map((page) => `/${page.slice("docs/".length)}`.replace(/\.md$/, "").replace(/\/index$/, "/"))
      .filter((page) => page !== "/");
    const api = readdirSync(join(root, "docs/api"), { recursive: true, encoding: "utf8" })
      .filter((f) => f.endsWith(".md"))
      .map((f) => `/api/${f}`.replace(/\.md$/, "").replace(/\/index$/, "/"));
    expect(api.length).toBeGreaterThan(25);
    expect([...pages, ...api].filter((page) => !nav.has(page))).toEqual([]);
  });

  it("links every API page's sources to the repository's own files under src/", () => {
    const sources = new Set<string>();
    for (const file of readdirSync(join(root, "docs/api"), { recursive: true, encoding: "utf8" })) {
      if (!file.endsWith(".md")) continue;
      for (const [, url] of readFileSync(join(root, "docs/api", file), "utf8").matchAll(
        /^Defined in: \[[^\]]*\]\(([^)]+)\)/gm,
      ))
        sources.add(url!);
    }
    expect(sources.size).toBeGreaterThan(100);
    const wrong = [...sources].filter((url) => {
      const match = /^https:\/\/github\.com\/idemkey\/idemkey\/blob\/main\/(src\/[^#]+)#L\d+$/.exec(url);
      return !match || !existsSync(join(root, match[1]!));
    });
    expect(wrong).toEqual([]);
  });
});

describe.skipIf(!available)("the documentation site in Chromium", () => {
  beforeAll(async () => {
    expect(built.status, built.output).toBe(0);
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
      if (ids.has(path) && !ids.get(path)!.has(id)) broken.push(`${from} -> ${path}#${id}`);
    }
    expect(broken).toEqual([]);
    expect(errors).toEqual([]);
    expect(seen.size).toBeGreaterThan(30);
    for (const path of [
      "/guide/getting-started.html",
      "/integrations/mcp.html",
      "/stores/sqlite.html",
      "/api/index.html",
      "/api/src/sqlite.html",
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
