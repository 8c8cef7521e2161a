import { readFileSync } from "node:fs";
import { join } from "node:path";
import { build } from "esbuild";
import { convertV4MiniflareOptions, Miniflare } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { idempotencyKey } from "../../src/index.js";
import type { Runtime, VectorInput } from "./worker.js";

const here = import.meta.dirname;
const root = join(here, "../..");

/** wrangler.jsonc as workerd is given it: its comments dropped (no string in it holds "//"). */
const config = JSON.parse(
  readFileSync(join(here, "wrangler.jsonc"), "utf8").replace(/^\s*\/\/.*$/gm, ""),
) as { main: string; compatibility_date: string; compatibility_flags?: string[] };

const vectors = JSON.parse(readFileSync(join(root, "test-vectors/keys.json"), "utf8")) as (VectorInput & {
  description: string;
  canonical: string;
  key: string;
})[];

let script = "";
let worker: Miniflare | undefined;
afterAll(async () => {
  await worker?.dispose();
});

/** workerd running the bundled Worker on `date` with `flags`. */
async function start(date: string, flags: string[]): Promise<Miniflare> {
  // Miniflare 5 takes its options in a new shape; the v4 one, converted, says a Worker's few fields plainly.
  const started = new Miniflare(
    convertV4MiniflareOptions({ modules: true, script, compatibilityDate: date, compatibilityFlags: flags }),
  );
  await started.ready;
  return started;
}

beforeAll(async () => {
  // A browser bundle, as a Worker without nodejs_compat needs: anything of node: in it fails the build.
  const bundled = await build({
    entryPoints: [join(here, config.main)],
    bundle: true,
    format: "esm",
    platform: "browser",
    conditions: ["workerd", "worker", "browser"],
    write: false,
    logLevel: "silent",
  });
  script = bundled.outputFiles[0]!.text;
  worker = await start(config.compatibility_date, config.compatibility_flags ?? []);
});

async function ask<T>(path: string, body?: unknown, on = worker!): Promise<T> {
  const response = await on.dispatchFetch(`http://worker.test${path}`, {
    method: body === undefined ? "GET" : "POST",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as T;
}

const withoutNode: Runtime = {
  hashImplementation: "pure-js",
  process: false,
  buffer: false,
  getBuiltinModule: false,
};

describe("workerd without nodejs_compat", () => {
  it("runs with no compatibility flag: no process, no Buffer, so keys hash with the pure-JS SHA-256", async () => {
    expect(config.compatibility_flags).toBeUndefined();
    const { runtime } = await ask<{ runtime: Runtime }>("/keys", []);
    expect(runtime).toEqual(withoutNode);
  });

  it("derives every key of test-vectors/keys.json byte for byte", async () => {
    const inputs = vectors.map(({ taskId, tool, args, step }) => ({ taskId, tool, args, step }));
    const { keys } = await ask<{ keys: { canonical: string; key: string }[] }>("/keys", inputs);
    expect(vectors.length).toBeGreaterThanOrEqual(25);
    expect(keys).toHaveLength(vectors.length);
    keys.forEach(({ canonical, key }, i) => {
      expect(canonical, vectors[i]!.description).toBe(vectors[i]!.canonical);
      expect(key, vectors[i]!.description).toBe(vectors[i]!.key);
    });
  });

  it("makes one harness call on memoryStore: one effect, then a replay of its result", async () => {
    const answer = await ask<{
      runtime: Runtime;
      effects: number;
      first: { value: unknown; replayed: boolean };
      second: { value: unknown; replayed: boolean };
    }>("/harness");
    expect(answer.runtime).toEqual(withoutNode);
    expect(answer.effects).toBe(1);
    // The key the tool was given, as Node derives it.
    const value = { charged: 500, key: idempotencyKey("task-1", "charge", { cents: 500 }) };
    expect(answer.first).toEqual({ value, replayed: false });
    expect(answer.second).toEqual({ value, replayed: true });
  });

  it("(control) is the date that keeps it off: from 2026-08-04, nodejs_compat is on with no flag at all", async () => {
    const later = await start("2026-08-04", []);
    try {
      const { runtime } = await ask<{ runtime: Runtime }>("/keys", [], later);
      expect(runtime).toMatchObject({ hashImplementation: "node:crypto", getBuiltinModule: true });
    } finally {
      await later.dispose();
    }
  });
});
