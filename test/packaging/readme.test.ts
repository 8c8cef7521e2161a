import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { tsBlocks } from "./readme-blocks.js";

const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");

describe("the README a newcomer reads", () => {
  it("reads in five minutes: at most 1,200 words, code and tables included, the Quickstart in the first half", () => {
    const words = readme.split(/\s+/).filter(Boolean).length;
    expect(words).toBeLessThanOrEqual(1_200);
    expect(readme.indexOf("## Quickstart")).toBeGreaterThan(0);
    expect(readme.indexOf("## Quickstart")).toBeLessThan(readme.length / 2);
  });

  it("leaves the guarantee and runtime tables to the site, which keeps their 'shown by' column", () => {
    expect(readme).not.toMatch(/\| shown by \|/);
    const guarantees = readFileSync(new URL("../../docs/guide/guarantees.md", import.meta.url), "utf8");
    expect(guarantees.match(/\| shown by \|/g)?.length).toBe(3);
    expect(readme).toContain("(docs/guide/guarantees.md)");
  });

  it("opens with examples/hello as its first code block, word for word", () => {
    const hello = readFileSync(new URL("../../examples/hello/index.ts", import.meta.url), "utf8");
    expect(tsBlocks("README.md")[0]?.code).toBe(hello);
  });

  it("has exactly two Quickstart commands: the demo on the embedded default, then npm test", () => {
    const quickstart = readme.slice(readme.indexOf("## Quickstart"));
    const commands = quickstart
      .slice(quickstart.indexOf("```sh\n") + 6, quickstart.indexOf("```", quickstart.indexOf("```sh\n") + 6))
      .split("\n")
      .filter(Boolean)
      .map((line) => line.split("#")[0]!.trim());
    expect(commands).toEqual(["npm ci && npm run demo", "npm test"]);
  });

  it("has an examples index that lists every example folder, each with a README of its own", () => {
    const examples = new URL("../../examples/", import.meta.url);
    const index = readFileSync(new URL("../../docs/guide/examples.md", import.meta.url), "utf8");
    const folders = readdirSync(examples, { withFileTypes: true }).filter((e) => e.isDirectory());
    expect(folders.length).toBeGreaterThanOrEqual(12);
    for (const { name } of folders) {
      expect(index, `docs/guide/examples.md lists ${name}`).toContain(
        `(https://github.com/idemkey/idemkey/tree/main/examples/${name})`,
      );
      const readme = readFileSync(new URL(`${name}/README.md`, examples), "utf8");
      expect(readme, `examples/${name}/README.md`).toMatch(/^# /);
    }
  });
});
