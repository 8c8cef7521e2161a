import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { tsBlocks } from "./readme-blocks.js";

const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");

describe("the README a newcomer reads", () => {
  it("fits the five-minute budget of 250 lines", () => {
    expect(readme.split("\n").length).toBeLessThanOrEqual(250);
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
});
