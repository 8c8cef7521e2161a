import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { bundlePage, PAGE_MODULE, pageModule } from "../../scripts/build-page.js";
import { PAGE_JS } from "../../src/inspector/page/index.js";

/**
 * The page's script is written in src/inspector/page/client/ and served from the generated app.ts, committed so
 * that tsx and vitest run from source without a build step: the two must not drift apart.
 */
describe("the inspector page's bundled script", () => {
  it("is the committed module, bundled from the current source (else run npx tsx scripts/build-page.ts)", async () => {
    const js = await bundlePage();
    // A boolean, not the texts: their diff would be the whole bundle.
    const fresh = readFileSync(PAGE_MODULE, "utf8") === pageModule(js);
    expect(fresh, "src/inspector/page/app.ts is stale: run npx tsx scripts/build-page.ts").toBe(true);
    expect(PAGE_JS === js).toBe(true);
  });

  it("is one classic script that fetches nothing but the inspector's API and writes no markup", () => {
    // An import would be a module script, refused by the page's <script src> and its CSP alike.
    expect(PAGE_JS).not.toMatch(/^\s*(import|export)\s/m);
    expect(PAGE_JS).not.toMatch(/\brequire\(|node:/);
    for (const sink of [
      "innerHTML",
      "outerHTML",
      "insertAdjacentHTML",
      "document.write",
      "eval(",
      "new Function",
    ]) {
      expect(PAGE_JS).not.toContain(sink);
    }
    const fetched = [...PAGE_JS.matchAll(/fetch\(\s*([^,)]+)/g)].map((m) => m[1]!.trim());
    expect(fetched.length).toBeGreaterThan(0);
    for (const target of fetched) expect(target).toMatch(/^(path|"\/api\/stream")$/);
  });
});
