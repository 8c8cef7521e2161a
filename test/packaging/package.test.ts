import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readmeDiagnostics } from "./readme-blocks.js";
import { packPackage, project, root } from "./support.js";

// The package as a user gets it: built, packed, and installed into a project outside the checkout. Building and
// type-checking take tens of seconds on a loaded machine: the budget is for that work, not a claim about speed.
const WORK_MS = 600_000;

const dir = mkdtempSync(join(tmpdir(), "idemkey-package-"));
let tarball = "";
beforeAll(() => {
  tarball = packPackage(dir);
}, WORK_MS);
afterAll(() => rmSync(dir, { recursive: true, force: true }), WORK_MS);

function tarballFiles(): string[] {
  const listed = spawnSync("tar", ["-tzf", tarball], { encoding: "utf8" });
  return listed.stdout.split("\n").filter(Boolean);
}

/** The tarball's budget: what `npm install idemkey` downloads and unpacks, with room for a few more subpaths. */
const PACKED_BYTES = 1_200_000;
const UNPACKED_BYTES = 4_000_000;
const bin = (name: string) => join(root, "node_modules/.bin", name);

describe("the packed package", () => {
  it("holds dist/, the test vectors, README.md, CHANGELOG.md, LICENSE and package.json, nothing else", () => {
    const tops = new Set(tarballFiles().map((f) => f.slice("package/".length).split("/")[0]));
    expect([...tops].sort()).toEqual([
      "CHANGELOG.md",
      "LICENSE",
      "README.md",
      "dist",
      "package.json",
      "test-vectors",
    ]);
    // Only built files under dist/: no tests, no TypeScript sources beside their declarations.
    const stray = tarballFiles().filter(
      (f) => f.startsWith("package/dist/") && !/\.(js|d\.ts|js\.map|d\.ts\.map|html)$/.test(f),
    );
    expect(stray).toEqual([]);
  });

  it(`stays within its size budget: ${PACKED_BYTES / 1e6} MB packed, ${UNPACKED_BYTES / 1e6} MB unpacked`, () => {
    expect(statSync(tarball).size).toBeLessThanOrEqual(PACKED_BYTES);
    const listed = spawnSync("tar", ["-tvzf", tarball], { encoding: "utf8" });
    const unpacked = listed.stdout
      .split("\n")
      .filter(Boolean)
      .reduce((sum, line) => sum + Number(line.split(/\s+/)[2]), 0);
    expect(unpacked).toBeGreaterThan(0);
    expect(unpacked).toBeLessThanOrEqual(UNPACKED_BYTES);
  });

  it("says its version in the CHANGELOG: the version in package.json has a section of its own", () => {
    const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };
    expect(readFileSync(join(root, "CHANGELOG.md"), "utf8")).toContain(`\n## ${version}\n`);
  });

  it("passes publint --strict: its exports, files and types as a registry user resolves them", () => {
    const linted = spawnSync(bin("publint"), ["--strict", join(dir, "stage")], { encoding: "utf8" });
    expect({ status: linted.status, out: linted.stdout + linted.stderr }).toMatchObject({ status: 0 });
    expect(linted.stdout).toContain("All good!");
  });

  it("passes @arethetypeswrong/cli on the tarball with the ESM-only profile: every subpath's types resolve", () => {
    const checked = spawnSync(bin("attw"), [tarball, "--profile", "esm-only", "--format", "ascii"], {
      encoding: "utf8",
    });
    expect({ status: checked.status, out: checked.stdout + checked.stderr }).toMatchObject({ status: 0 });
  });

  it("ships source maps only with the sources in them (sourcesContent), since src/ is not in the tarball", () => {
    const files = tarballFiles();
    expect(files.some((f) => f.startsWith("package/src/"))).toBe(false);
    const maps = files.filter((f) => f.endsWith(".js.map"));
    expect(maps.length).toBeGreaterThan(10);
    const unpacked = project(join(dir, "maps"), tarball, "none");
    for (const map of maps) {
      const json = JSON.parse(
        readFileSync(join(unpacked, "node_modules/idemkey", map.slice("package/".length)), "utf8"),
      ) as { sources: string[]; sourcesContent?: (string | null)[] };
      expect(json.sourcesContent, map).toHaveLength(json.sources.length);
      expect(
        json.sourcesContent!.every((s) => typeof s === "string" && s.length > 0),
        map,
      ).toBe(true);
    }
  });

  it("splits its entries by side: the root is the harness, idemkey/owner the engine, errors and stores on both", () => {
    const bare = project(join(dir, "sides"), tarball, "none");
    const script = `
      const root = await import("idemkey");
      const owner = await import("idemkey/owner");
      console.log(JSON.stringify({ root: Object.keys(root).sort(), owner: Object.keys(owner).sort() }));`;
    const run = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
      cwd: bare,
      encoding: "utf8",
    });
    expect(run.stderr).toBe("");
    const { root: rootNames, owner } = JSON.parse(run.stdout) as { root: string[]; owner: string[] };
    expect(rootNames).toEqual(
      expect.arrayContaining(["createHarness", "defineTool", "idempotencyKey", "Effect"]),
    );
    expect(rootNames).not.toContain("idempotencyEngine");
    expect(rootNames).not.toContain("ProblemType");
    expect(owner).toEqual(expect.arrayContaining(["idempotencyEngine", "ProblemType"]));
    expect(owner).not.toContain("createHarness");
    expect(owner).not.toContain("idempotencyKey");
    for (const shared of [
      "IdemkeyError",
      "IdempotencyConflictError",
      "StoreError",
      "memoryStore",
      "RecordState",
    ]) {
      expect(rootNames, shared).toContain(shared);
      expect(owner, shared).toContain(shared);
    }
  });
});

const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  exports: Record<string, unknown>;
  peerDependencies: Record<string, string>;
};
const subpaths = Object.keys(manifest.exports)
  .filter((entry) => entry !== "./package.json")
  .map((entry) => `idemkey${entry.slice(1)}`);

/**
 * The peers each subpath loads when it is imported, in the order it loads them; every other subpath loads none (its
 * peers' types only, or a client the application passes in).
 */
const PEERS: Record<string, string[]> = {
  "idemkey/sqlite": ["better-sqlite3"],
  "idemkey/dynamodb": ["@aws-sdk/client-dynamodb"],
  // asSchema and jsonSchema wrap a tool's schema so that the key is what the model sent (docs/integration-contract.md).
  "idemkey/ai": ["ai"],
  "idemkey/openai-agents": ["@openai/agents"],
  "idemkey/otel": ["@opentelemetry/api"],
  "idemkey/langgraph": ["@langchain/core", "@langchain/langgraph"],
  "idemkey/langchain": ["@langchain/core", "langchain"],
  "idemkey/mastra": ["@mastra/core"],
  "idemkey/dbos": ["@dbos-inc/dbos-sdk"],
  "idemkey/restate": ["@restatedev/restate-sdk"],
  "idemkey/temporal": ["@temporalio/activity", "@temporalio/common"],
  "idemkey/inngest": ["inngest"],
  "idemkey/workflow": ["workflow"],
};

/** Imports `specifier` in a fresh Node in `cwd`; a failure prints the error's name and message on stderr. */
function load(cwd: string, specifier: string) {
  return spawnSync(
    process.execPath,
    [
      "--no-warnings",
      "--input-type=module",
      "-e",
      `try { await import(${JSON.stringify(specifier)}); } catch (e) { console.error(\`\${e.name}: \${e.message}\`); process.exit(1); }`,
    ],
    { cwd, encoding: "utf8" },
  );
}

/** The line a subpath must print without `pkg`, with the range read from package.json. */
function missing(subpath: string, pkg: string): string {
  const range = manifest.peerDependencies[pkg];
  expect(range, `${pkg} in peerDependencies`).toBeTypeOf("string");
  return `MissingPeerError: ${subpath} needs ${pkg} ${range}: npm install ${pkg}\n`;
}

describe("a subpath whose optional peer is not installed", () => {
  it(
    "is a MissingPeerError with the package and the range from peerDependencies; others load",
    () => {
      expect(Object.keys(PEERS).filter((subpath) => !subpaths.includes(subpath))).toEqual([]);
      const bare = project(join(dir, "bare"), tarball, "none");
      expect(load(bare, "idemkey")).toMatchObject({ status: 0, stderr: "" });
      for (const subpath of subpaths) {
        const loaded = load(bare, subpath);
        const peers = PEERS[subpath];
        if (peers === undefined) {
          expect(loaded, subpath).toMatchObject({ status: 0, stderr: "" });
        } else {
          expect(loaded.status, subpath).toBe(1);
          expect(loaded.stderr, subpath).toBe(missing(subpath, peers[0]!));
        }
      }
    },
    WORK_MS,
  );

  it(
    "names each peer of a subpath that needs several, when only that one is missing",
    () => {
      const without = new Map<string, string>();
      for (const [subpath, peers] of Object.entries(PEERS)) {
        for (const pkg of peers) {
          if (!without.has(pkg)) {
            without.set(
              pkg,
              project(join(dir, `without-${pkg.replace("/", "+")}`), tarball, { except: pkg }),
            );
          }
          const app = without.get(pkg)!;
          const loaded = load(app, subpath);
          expect(loaded.stderr, `${subpath} without ${pkg}`).toBe(missing(subpath, pkg));
        }
      }
    },
    WORK_MS,
  );

  it(
    "(control) loads with every peer installed, so the failures above are the missing peer's",
    () => {
      const full = project(join(dir, "full"), tarball, "all");
      for (const subpath of Object.keys(PEERS)) {
        expect(load(full, subpath), subpath).toMatchObject({ status: 0, stderr: "" });
      }
    },
    WORK_MS,
  );

  it("is how every built file loads a peer: none imports one statically", () => {
    const unpacked = project(join(dir, "scan"), tarball, "none");
    const peers = Object.keys(manifest.peerDependencies).map((p) => p.replace(/[/.]/g, "\\$&"));
    const statically = new RegExp(
      `^\\s*(?:import|export)\\b[^;"'()]*?(?:from\\s*)?["'](?:${peers.join("|")})(?:/[^"']*)?["']`,
      "m",
    );
    const files = tarballFiles().filter((f) => f.endsWith(".js"));
    expect(files.length).toBeGreaterThan(50);
    const offenders = files.filter((f) =>
      statically.test(
        readFileSync(join(unpacked, "node_modules/idemkey", f.slice("package/".length)), "utf8"),
      ),
    );
    expect(offenders).toEqual([]);
  });
});

describe("the README's TypeScript blocks", () => {
  it(
    "compile under tsc --strict against the packed package, with only the declared placeholders filled in",
    () => {
      const app = project(join(dir, "readme"), tarball, "all");
      expect(readmeDiagnostics(app)).toEqual([]);
    },
    WORK_MS,
  );
});
