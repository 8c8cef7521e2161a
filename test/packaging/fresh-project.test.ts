import { type SpawnSyncReturns, spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { onceInCi } from "../support/node-version.js";
import { readmeDiagnostics, tsBlocks } from "./readme-blocks.js";
import { RUNTIMES, type Runtime } from "./runtimes.js";
import { packPackage, root } from "./support.js";

/**
 * The packed tarball in projects made exactly as a user makes them: `npm init -y` (npm 11 writes "type": "commonjs"),
 * then only the commands of the README's Install block, then `npx tsc --init`. The README's first program and every
 * example compile there under tsc --init's defaults and run, against the tarball, on Node 24, 22 and 20, Bun and
 * Deno. npm installs from its cache first (--prefer-offline): nothing else is downloaded. The Node 20 project builds
 * better-sqlite3 12 once and keeps the binary as a local prebuild (better-sqlite3's own prebuild-install reads it, as
 * it reads the one it downloads online), so later runs build nothing.
 */
const WORK_MS = 900_000;

const { node24, node22, node20, bun, deno } = RUNTIMES;
// .ci/run tests on 24, 22 and 20 in turn: this suite drives every runtime itself, so it runs on CI's Node 24 leg only.
const once = onceInCi("the fresh projects (every runtime, driven from one leg)");
const elsewhereInCi = once.skip;
const label = elsewhereInCi
  ? once.label
  : node24.bin === undefined
    ? ` (skipped: no Node 24 at ${node24.where}; run .ci/run, which installs it)`
    : "";
if (!elsewhereInCi && node24.bin === undefined)
  console.warn(`skipped the fresh projects: no Node 24 at ${node24.where}`);
const skip = label !== "";

/** Packages the README's other blocks and the docs' blocks import, beside what its Install block installs. */
const README_IMPORTS = [
  "ai@7",
  "@modelcontextprotocol/server@2",
  "@modelcontextprotocol/client@2",
  "zod@4",
  "pg@8",
  "@types/pg",
  "ioredis@5",
  "hono@4",
  "@openai/agents",
  "@langchain/core@1",
  "@langchain/langgraph@1",
  "langchain@1",
  "@mastra/core@1",
  "@anthropic-ai/claude-agent-sdk",
  "@dbos-inc/dbos-sdk",
  "@libsql/client@0.18",
  "mysql2@3",
  "@aws-sdk/client-dynamodb@3",
  "@a2a-js/sdk@1",
  "express@5",
  "@types/express@5",
];
/** What the examples import beyond that. */
const EXAMPLE_IMPORTS = [
  "@modelcontextprotocol/sdk@1",
  "@opentelemetry/api@1",
  "@opentelemetry/sdk-trace-base@2",
  "@opentelemetry/context-async-hooks@2",
  "@restatedev/restate-sdk@1",
  "@restatedev/restate-server@1",
];
/**
 * The examples, each run by a runtime's command on its compiled JavaScript: `node`, `bun`, and `deno run` with the
 * permissions its README names. cloudflare-agents runs in workerd, not in a project's runtime (its Worker imports
 * `cloudflare:workers` and needs Durable Objects): test/integrations/cloudflare-agents.test.ts runs it.
 */
const EXAMPLES = [
  "mcp",
  "ai",
  "openai-agents",
  "langgraph",
  "mastra",
  "claude-agent-sdk",
  "otel",
  "dbos",
  "restate",
];

/**
 * The examples Node 20 cannot run, each with what stops it, which a test checks rather than assumes: a package's
 * `engines` asks for a newer Node, or the package calls a built-in Node 20 lacks. The Node 20 project installs what
 * each of the others imports.
 */
const NOT_ON_NODE20: Record<
  string,
  { engines: string; of?: string } | { builtin: string; calledIn: string }
> = {
  ai: { engines: "ai" },
  // It ran on Node 20.20 by hand, but npm warns EBADENGINE at install: not a supported setup to test.
  "openai-agents": { engines: "openai", of: "@openai/agents" },
  mastra: { engines: "@mastra/core" },
  restate: { builtin: "Promise.withResolvers", calledIn: "@restatedev/restate-sdk/dist/promises.js" },
};
const NODE20_EXAMPLES = EXAMPLES.filter((name) => !(name in NOT_ON_NODE20));
/** What the examples Node 20 runs import beyond the README's Install block. */
const NODE20_IMPORTS = [
  "@modelcontextprotocol/sdk@1",
  "zod@4",
  "@langchain/core@1",
  "@langchain/langgraph@1",
  "@anthropic-ai/claude-agent-sdk",
  "@opentelemetry/api@1",
  "@opentelemetry/sdk-trace-base@2",
  "@opentelemetry/context-async-hooks@2",
  "@dbos-inc/dbos-sdk",
  "pg@8",
  "@types/pg",
];

const cache = join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "idemkey-fresh");
const dir = mkdtempSync(join(tmpdir(), "idemkey-fresh-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }), WORK_MS);
const app = join(dir, "app");
const app20 = join(dir, "app20");
let tarball = "";
const installs: { project: string; command: string; status: number | null; output: string }[] = [];

/** Runs `command` with `node`'s folder first on PATH, so that npm and npx run on that Node. */
function on(node: string, command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) {
  const home = dirname(dirname(node));
  return spawnSync(command, args, {
    cwd,
    encoding: "utf8",
    env: { ...process.env, PATH: `${home}/bin:${process.env.PATH}`, npm_config_nodedir: home, ...env },
  });
}

/** The README Install block's commands, one argv each, comments dropped. */
function installCommands(): string[][] {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## Install"));
  const block = section.slice(
    section.indexOf("```sh\n") + 6,
    section.indexOf("```", section.indexOf("```sh\n") + 6),
  );
  return block
    .split("\n")
    .map((line) => line.split("#")[0]!.trim())
    .filter(Boolean)
    .map((line) => line.split(/\s+/));
}

/**
 * Makes a project as a user does, with `node`'s npm: `npm init -y`, then the README's Install commands, with
 * `idemkey` read from the tarball (the registry does not have it yet) and `replace`'s other changes.
 */
function makeProject(
  node: string,
  at: string,
  replace: Record<string, string>,
  env: NodeJS.ProcessEnv = {},
): string {
  mkdirSync(at);
  const init = on(node, "npm", ["init", "-y"], at);
  expect(init.status, init.stderr).toBe(0);
  const made = JSON.parse(readFileSync(join(at, "package.json"), "utf8")) as { type?: string };
  // What the README's first line is for: npm 11 writes CommonJS (npm 10 writes no type, which means CommonJS).
  expect(made.type ?? "commonjs").toBe("commonjs");
  for (const argv of installCommands()) {
    const args = argv.slice(1).map((arg) => (arg === "idemkey" ? tarball : (replace[arg] ?? arg)));
    if (args[0] === "install") args.push("--no-audit", "--no-fund", "--prefer-offline");
    const done = on(node, argv[0]!, args, at, env);
    installs.push({
      project: at,
      command: argv.join(" "),
      status: done.status,
      output: done.stdout + done.stderr,
    });
  }
  return at;
}

/** Runs a step and returns what a user sees: the status and both streams. */
function seen(run: SpawnSyncReturns<string>) {
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** The owner's own count of charges, from its file, never what the program printed. */
function charges(cwd: string, node: string): number {
  const db = on(
    node,
    "node",
    [
      "-e",
      'console.log(new (require("better-sqlite3"))("payments.db").prepare("SELECT count(*) AS n FROM charges").get().n)',
    ],
    cwd,
  );
  return Number(db.stdout.trim());
}

/** The Node 20 install's environment: better-sqlite3 12 from the local prebuild when one is kept, else built. */
function node20Env(): NodeJS.ProcessEnv {
  const prebuilds = join(cache, "prebuilds");
  const kept = existsSync(prebuilds) && readdirSync(prebuilds).some((f) => f.includes("-node-v115-"));
  return kept
    ? { npm_config_better_sqlite3_local_prebuilds: prebuilds }
    : { npm_config_build_from_source: "true" };
}

/** Keeps the Node 20 project's better-sqlite3 binary as the prebuild prebuild-install looks for by name. */
function keepPrebuild(project: string, node: string) {
  const pkg = join(project, "node_modules/better-sqlite3");
  const { version } = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")) as { version: string };
  const abi = on(node, "node", ["-p", "process.versions.modules"], project).stdout.trim();
  const name = `better-sqlite3-v${version}-node-v${abi}-linux-x64.tar.gz`;
  mkdirSync(join(cache, "prebuilds"), { recursive: true });
  if (existsSync(join(cache, "prebuilds", name))) return;
  const packed = spawnSync(
    "tar",
    ["-czf", join(cache, "prebuilds", name), "build/Release/better_sqlite3.node"],
    {
      cwd: pkg,
    },
  );
  expect(packed.status).toBe(0);
}

/** The examples as a user copies them: imports of ../../src/<subpath>/index.js read `idemkey/<subpath>`. */
function copyExamples(to: string, names: string[]) {
  for (const name of [...names, "engines"]) {
    const from = join(root, "examples", name);
    mkdirSync(join(to, name), { recursive: true });
    for (const file of readdirSync(from).filter((f) => f.endsWith(".ts"))) {
      const text = readFileSync(join(from, file), "utf8")
        .replaceAll('"../../src/index.js"', '"idemkey"')
        .replace(/"\.\.\/\.\.\/src\/([\w-]+)\/index\.js"/g, '"idemkey/$1"');
      expect(text, `${name}/${file} imports only idemkey's entries`).not.toMatch(/\.\.\/\.\.\/src\//);
      writeFileSync(join(to, name, file), text);
    }
  }
}

describe.skipIf(skip)(
  `fresh projects made with npm init -y, the packed tarball installed as the README says${label}`,
  () => {
    beforeAll(() => {
      const started = Date.now();
      tarball = packPackage(dir);
      makeProject(node24.bin!, app, {});
      const more = on(
        node24.bin!,
        "npm",
        ["install", "--no-audit", "--no-fund", "--prefer-offline", ...README_IMPORTS, ...EXAMPLE_IMPORTS],
        app,
      );
      installs.push({
        project: app,
        command: "npm install <the blocks' imports>",
        status: more.status,
        output: more.stdout + more.stderr,
      });
      const init = on(node24.bin!, "npx", ["tsc", "--init"], app);
      expect(init.status, init.stdout).toBe(0);
      copyExamples(join(app, "examples"), EXAMPLES);
      writeFileSync(join(app, "hello.ts"), tsBlocks("README.md")[0]!.code);
      if (node20.bin) {
        makeProject(node20.bin, app20, { "better-sqlite3": "better-sqlite3@12" }, node20Env());
        if (existsSync(join(app20, "node_modules/better-sqlite3/build/Release/better_sqlite3.node")))
          keepPrebuild(app20, node20.bin);
        const more20 = on(
          node20.bin,
          "npm",
          ["install", "--no-audit", "--no-fund", "--prefer-offline", ...NODE20_IMPORTS],
          app20,
        );
        installs.push({
          project: app20,
          command: "npm install <the Node 20 examples' imports>",
          status: more20.status,
          output: more20.stdout + more20.stderr,
        });
        const init20 = on(node20.bin, "npx", ["tsc", "--init"], app20);
        expect(init20.status, init20.stdout).toBe(0);
        copyExamples(join(app20, "examples"), NODE20_EXAMPLES);
        writeFileSync(join(app20, "hello.ts"), tsBlocks("README.md")[0]!.code);
      }
      // On stdout, for the report: how long making the projects took on this machine (never asserted).
      console.log(`fresh projects: packed and installed in ${Math.round((Date.now() - started) / 1000)} s`);
    }, WORK_MS);

    it("finds every runtime it is to run on (in CI all five; elsewhere the missing ones are skipped by name)", () => {
      const missing = Object.values(RUNTIMES).filter((r) => r.bin === undefined);
      if (process.env.CI === "true") expect(missing.map((r) => `${r.name}: ${r.where}`)).toEqual([]);
      for (const r of missing) console.log(`fresh projects: no ${r.name} (${r.where}): its runs are skipped`);
    });

    it("installs with the README's commands alone: an ES module project, no ERESOLVE, no --force", () => {
      for (const install of installs) {
        expect(install.output, `${install.project}: ${install.command}`).not.toMatch(/ERESOLVE|peer dep/i);
        expect(install.status, `${install.project}: ${install.command}\n${install.output}`).toBe(0);
      }
      const pkg = JSON.parse(readFileSync(join(app, "package.json"), "utf8")) as { type: string };
      expect(pkg.type).toBe("module");
      const version = (at: string, name: string) =>
        (
          JSON.parse(readFileSync(join(at, "node_modules", name, "package.json"), "utf8")) as {
            version: string;
          }
        ).version;
      expect(version(app, "idemkey")).toBe(
        (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string }).version,
      );
      expect(version(app, "ai")).toMatch(/^7\./);
      expect(version(app, "better-sqlite3")).toMatch(/^13\./);
      if (node20.bin) expect(version(app20, "better-sqlite3")).toMatch(/^12\./);
    });

    it(
      "compiles the README's first program and every example with tsc --init's defaults (strict)",
      () => {
        const compiled = on(node24.bin!, "npx", ["tsc", "-p", "tsconfig.json"], app);
        expect(compiled.stdout + compiled.stderr).toBe("");
        expect(compiled.status).toBe(0);
        expect(existsSync(join(app, "hello.js"))).toBe(true);
      },
      WORK_MS,
    );

    /** The README's first program: a crash after the charge, then a replay; one charge in the owner's file. */
    function hello(runtime: Runtime, cwd: string, argv: string[]) {
      rmSync(join(cwd, "payments.db"), { force: true });
      rmSync(join(cwd, "ledger.db"), { force: true });
      const crashed = on(runtime.bin!, argv[0]!, [...argv.slice(1), "crash"], cwd, {
        DENO_NO_UPDATE_CHECK: "1",
      });
      expect(seen(crashed)).toEqual({ status: 1, stdout: "", stderr: "" });
      const replayed = on(runtime.bin!, argv[0]!, argv.slice(1), cwd, { DENO_NO_UPDATE_CHECK: "1" });
      expect(seen(replayed)).toEqual({
        status: 0,
        stdout: "charge #1; the payments database holds 1 charge(s)\n",
        stderr: "",
      });
      // better-sqlite3 is built for the project's Node: Node 20's project reads its file with Node 20.
      expect(charges(cwd, runtime === node20 ? node20.bin! : node24.bin!)).toBe(1);
    }

    it(
      "runs the README's first block as pasted on Node 24: node hello.ts",
      () => {
        expect(tsBlocks("README.md")[0]!.code).toBe(
          readFileSync(join(root, "examples/hello/index.ts"), "utf8"),
        );
        hello(node24, app, ["node", "hello.ts"]);
      },
      WORK_MS,
    );

    it.skipIf(!node22.bin)(
      `runs it on Node 22: node hello.ts${node22.bin ? "" : " (skipped: no Node 22)"}`,
      () => {
        hello(node22, app, ["node", "hello.ts"]);
      },
      WORK_MS,
    );

    it.skipIf(!bun.bin)(
      `runs it on Bun: bun hello.ts${bun.bin ? "" : " (skipped: no Bun)"}`,
      () => {
        hello(bun, app, [bun.bin!, "hello.ts"]);
      },
      WORK_MS,
    );

    it.skipIf(!deno.bin)(
      `runs it on Deno with the permissions the README names${deno.bin ? "" : " (skipped: no Deno)"}`,
      () => {
        const readme = readFileSync(join(root, "README.md"), "utf8");
        const command = /`deno run ([^`]*) hello\.ts`/.exec(readme)?.[1];
        expect(command).toBe("--allow-read --allow-write --allow-ffi --allow-sys");
        hello(deno, app, [deno.bin!, "run", "--no-prompt", ...command!.split(" "), "hello.ts"]);
      },
      WORK_MS,
    );

    it.skipIf(!node20.bin)(
      `runs it on Node 20 with better-sqlite3 12, compiled by npx tsc${node20.bin ? "" : " (skipped: no Node 20)"}`,
      () => {
        const compiled = on(node20.bin!, "npx", ["tsc"], app20);
        expect(compiled.stdout + compiled.stderr).toBe("");
        hello(node20, app20, ["node", "hello.js"]);
      },
      WORK_MS,
    );

    /** The command line of `runtime` for an example, the one its README shows (Deno's with its permissions). */
    function exampleArgv(name: string, runtime: Runtime): string[] {
      const file = `examples/${name}/index.js`;
      if (runtime === bun) return [bun.bin!, file];
      if (runtime !== deno) return ["node", file];
      const readme = readFileSync(join(root, "examples", name, "README.md"), "utf8");
      const line = new RegExp(`^deno run ((?:--allow-[a-z]+ )*)examples/${name}/index\\.js`, "m").exec(
        readme,
      );
      expect(line, `examples/${name}/README.md names its deno run command`).not.toBeNull();
      return [deno.bin!, "run", "--no-prompt", ...line![1]!.split(" ").filter(Boolean), file];
    }

    for (const name of EXAMPLES) {
      for (const runtime of [node24, node22, node20, bun, deno]) {
        if (runtime === node20 && !NODE20_EXAMPLES.includes(name)) continue;
        const off = !runtime.bin;
        const why = off ? ` (skipped: no ${runtime.name})` : "";
        const command =
          runtime === deno ? "deno run with its README's permissions" : runtime === bun ? "bun" : "node";
        const project = runtime === node20 ? "the Node 20 project (better-sqlite3 12)" : "the project";
        it.skipIf(off)(
          `runs examples/${name} on ${runtime.name} (${command}), compiled, in ${project}${why}`,
          () => {
            const cwd = runtime === node20 ? app20 : app;
            // Restate's SDK logs each failed attempt of a ctx.run as a WARN with its stack on stderr: the lost reply
            // this example stages. Its stdout counts the attempts; ERROR keeps stderr for what is not staged.
            const env: NodeJS.ProcessEnv = { DENO_NO_UPDATE_CHECK: "1" };
            if (name === "restate") env.RESTATE_LOGGING = "ERROR";
            const argv = exampleArgv(name, runtime);
            const ran = on(runtime.bin!, argv[0]!, argv.slice(1), cwd, env);
            expect({ status: ran.status, stderr: ran.stderr }, ran.stdout).toEqual({ status: 0, stderr: "" });
            expect(ran.stdout).not.toBe("");
          },
          WORK_MS,
        );
      }
    }

    for (const [name, reason] of Object.entries(NOT_ON_NODE20)) {
      const what =
        "engines" in reason
          ? `${reason.engines}'s engines field${reason.of ? ` (a dependency of ${reason.of})` : ""} asks for a newer Node`
          : `${reason.calledIn.split("/dist/")[0]} calls ${reason.builtin}, which Node 20 lacks`;
      it.skipIf(!node20.bin)(`does not run examples/${name} on Node 20: ${what}`, () => {
        const node20Version = on(node20.bin!, "node", ["-p", "process.versions.node"], app).stdout.trim();
        if ("engines" in reason) {
          const pkg = JSON.parse(
            readFileSync(join(app, "node_modules", reason.engines, "package.json"), "utf8"),
          ) as { engines?: { node?: string } };
          const minimum = /^>=\s*(\d+)\.?(\d+)?/.exec(pkg.engines?.node ?? "");
          expect(minimum, `${reason.engines}'s engines.node: ${pkg.engines?.node}`).not.toBeNull();
          const [major, minor] = node20Version.split(".").map(Number) as [number, number];
          const [needMajor, needMinor] = [Number(minimum![1]), Number(minimum![2] ?? 0)];
          expect(major < needMajor || (major === needMajor && minor < needMinor), node20Version).toBe(true);
        } else {
          expect(readFileSync(join(app, "node_modules", reason.calledIn), "utf8")).toContain(reason.builtin);
          const [object, member] = reason.builtin.split(".") as [string, string];
          const has = on(node20.bin!, "node", ["-p", `typeof ${object}.${member}`], app).stdout.trim();
          expect(has).toBe("undefined");
        }
      });
    }

    it("does not run examples/cloudflare-agents on Node, Bun or Deno: its Worker imports cloudflare:workers, which only workerd provides", () => {
      // test/integrations/cloudflare-agents.test.ts runs it in workerd (the example's driver starts workerd).
      const worker = readFileSync(join(root, "examples/cloudflare-agents/worker.ts"), "utf8");
      expect(worker).toMatch(/^import \{[^}]*\} from "cloudflare:workers";$/m);
      writeFileSync(join(app, "cloudflare-probe.mjs"), 'import "cloudflare:workers";\n');
      const tried = [
        [node24, ["node", "cloudflare-probe.mjs"]],
        [bun, [bun.bin, "cloudflare-probe.mjs"]],
        [deno, [deno.bin, "run", "--no-prompt", "cloudflare-probe.mjs"]],
      ] as const;
      for (const [runtime, argv] of tried) {
        if (!runtime.bin) continue;
        const ran = on(runtime.bin, argv[0]!, argv.slice(1) as string[], app, { DENO_NO_UPDATE_CHECK: "1" });
        expect(ran.status, runtime.name).not.toBe(0);
        expect(ran.stderr, runtime.name).toMatch(/cloudflare/);
      }
    });

    it(
      "type-checks every README and docs block under tsc --strict against what npm installed",
      () => {
        // Beside the app, with its node_modules, so that the app's own tsconfig.json (tsc --init's, which takes every
        // .ts file under it) does not take the blocks, which need the placeholders' looser settings.
        const readme = join(dir, "readme");
        mkdirSync(readme);
        writeFileSync(
          join(readme, "package.json"),
          JSON.stringify({ name: "readme", private: true, type: "module" }),
        );
        symlinkSync(join(app, "node_modules"), join(readme, "node_modules"));
        expect(readmeDiagnostics(readme, node24.bin!)).toEqual([]);
      },
      WORK_MS,
    );
  },
);
