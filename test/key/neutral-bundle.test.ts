import { once } from "node:events";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { createContext, runInContext } from "node:vm";
import { build } from "esbuild";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { requestFingerprint } from "../../src/owner/fingerprint.js";
import { type decodeSaved, encodeSaved } from "../../src/owner/saved-response.js";
import { chromiumFor, launchChromium } from "../support/chromium.js";

/**
 * The core imports and keys where node:crypto (and Buffer, and process) do not exist: `src/index.ts` (key, harness,
 * claim, memory store, errors) and the owner engine bundled by esbuild for a neutral platform must import nothing
 * from `node:`, and the bundle, run in Debian's Chromium, must give test-vectors/keys.json's keys and one effect for
 * two harness calls on memoryStore, counted by the tool in the page.
 */
const available = chromiumFor("the core-in-a-browser test");

const entry = (path: string) =>
  fileURLToPath(new URL(path.startsWith("./") ? path : `../../src/${path}`, import.meta.url));

async function neutralBundle(path: string, format: "esm" | "iife" = "esm") {
  const result = await build({
    entryPoints: [entry(path)],
    bundle: true,
    platform: "neutral",
    format,
    globalName: format === "iife" ? "idemkey" : undefined,
    write: false,
    metafile: true,
    logLevel: "silent",
    // Kept as imports rather than failing the build, so that the assertion names them.
    external: ["node:*"],
  });
  const nodeImports = Object.entries(result.metafile.inputs).flatMap(([file, input]) =>
    input.imports.filter((i) => i.path.startsWith("node:")).map((i) => `${file} imports ${i.path}`),
  );
  return { code: result.outputFiles[0]!.text, nodeImports };
}

describe("the core bundled for a neutral platform", () => {
  it.each(["index.ts", "owner/index.ts"])("%s imports nothing from node:", async (path) => {
    const { nodeImports } = await neutralBundle(path);
    expect(nodeImports).toEqual([]);
  });
});

interface Vector {
  taskId: string;
  tool: string;
  args: unknown;
  step?: string | number;
  key: string;
}
const vectors: Vector[] = JSON.parse(
  readFileSync(new URL("../../test-vectors/keys.json", import.meta.url), "utf8"),
);

/**
 * What runs inside the bare realm, as JavaScript text: a function of the bundle's exports and the vectors. Text
 * rather than a function of this file, which the test runner's transform may have decorated with helpers.
 */
const EXERCISE = `async (core, vectors) => {
  const keys = vectors.map((v) =>
    core.idempotencyKey(v.taskId, v.tool, v.args, v.step === undefined ? undefined : { step: v.step }),
  );
  let effects = 0;
  const send = core.defineTool({
    name: "sendEmail",
    effect: "keyed",
    run: (args) => {
      effects++;
      return { sent: args.to, effect: effects };
    },
  });
  const harness = core.createHarness({ store: core.memoryStore() });
  const first = await harness.call("task-1", send, { to: "ada@example.com" });
  const second = await harness.call("task-1", send, { to: "ada@example.com" });
  return {
    keys,
    first,
    second,
    effects,
    hashImplementation: core.hashImplementation,
    globals: { process: typeof process, Buffer: typeof Buffer, require: typeof require },
  };
}`;

interface Exercised {
  keys: string[];
  first: unknown;
  second: unknown;
  effects: number;
  hashImplementation: string;
  globals: Record<string, string>;
}

function expectExercised(result: Exercised): void {
  expect(result.globals).toEqual({ process: "undefined", Buffer: "undefined", require: "undefined" });
  expect(result.hashImplementation).toBe("pure-js");
  expect(result.keys).toEqual(vectors.map((v) => v.key));
  // Counted by the tool itself in the realm, not by the harness: one run for two calls.
  expect(result.effects).toBe(1);
  expect(result.first).toEqual({ sent: "ada@example.com", effect: 1 });
  expect(result.second).toEqual(result.first);
}

describe("the neutral core bundle in a bare V8 realm (node:vm, web globals only)", () => {
  it("gives the vectors' keys and one effect on memoryStore", async () => {
    const { code } = await neutralBundle("index.ts", "iife");
    // Only what a browser or workerd without nodejs_compat has that the core uses; no process, Buffer or require.
    const context = createContext({
      TextEncoder,
      TextDecoder,
      atob,
      btoa,
      setTimeout,
      clearTimeout,
      queueMicrotask,
      performance,
      AbortController,
      AbortSignal,
      Event,
      EventTarget,
      DOMException,
      URL,
      structuredClone,
      setInterval,
      clearInterval,
      crypto: { randomUUID: () => globalThis.crypto.randomUUID() },
      console,
    });
    runInContext(code, context);
    const result = await runInContext(`(${EXERCISE})(idemkey, ${JSON.stringify(vectors)})`, context);
    // Across realms toEqual compares prototypes too: copy the plain data into this realm first.
    expectExercised(JSON.parse(JSON.stringify(result)) as Exercised);
  });
});

describe("the owner engine's byte paths in a bare V8 realm", () => {
  it("fingerprints a raw body and round-trips a binary saved response as Node does", async () => {
    const { code } = await neutralBundle("./support/owner-bytes.ts", "iife");
    const context = createContext({ TextEncoder, TextDecoder, atob, btoa });
    runInContext(code, context);
    const body = Uint8Array.from({ length: 300 }, (_, i) => (i * 37) % 256);
    const fingerprint = (realm: { requestFingerprint: typeof requestFingerprint }) =>
      realm.requestFingerprint("POST", "/files?x=1", "application/octet-stream", { bytes: body });
    const there = runInContext("idemkey", context) as {
      requestFingerprint: typeof requestFingerprint;
      encodeSaved: typeof encodeSaved;
      decodeSaved: typeof decodeSaved;
    };
    expect(JSON.parse(JSON.stringify(fingerprint(there)))).toEqual(fingerprint({ requestFingerprint }));
    const response = {
      status: 200,
      headers: [["content-type", "application/octet-stream"]] as [string, string][],
      body,
    };
    const saved = there.encodeSaved(response);
    expect(saved).toBe(encodeSaved(response));
    const decoded = there.decodeSaved(saved);
    expect(decoded.saved && Array.from(decoded.response.body)).toEqual(Array.from(body));
  });
});

describe.skipIf(!available)("the neutral core bundle in Chromium", () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it("has no node:crypto, Buffer or process, and gives the vectors' keys and one effect on memoryStore", async () => {
    const { code } = await neutralBundle("index.ts", "esm");
    // Served from a loopback origin, so that the page imports it as any site would a module.
    const server = createServer((request, response) => {
      if (request.url === "/core.mjs")
        response.writeHead(200, { "content-type": "text/javascript" }).end(code);
      else response.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>core</title>");
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    let result: unknown;
    try {
      await page.goto(`http://127.0.0.1:${port}/`);
      result = await page.evaluate(
        `(async () => (${EXERCISE})(await import("/core.mjs"), ${JSON.stringify(vectors)}))()`,
      );
    } finally {
      await page.close();
      server.closeAllConnections();
      server.close();
    }
    expect(errors).toEqual([]);
    expectExercised(result as Exercised);
  });
});
