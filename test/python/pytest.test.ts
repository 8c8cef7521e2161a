import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { onceInCi } from "../support/node-version.js";
import { PG_URL, REDIS_URL } from "../support/services.js";
import { PYTHON, pythonReady } from "./support.js";

// The Python package's own tests (python/tests), run by pytest as part of `npm test`. pytest writes its JUnit XML to
// .tmp/pytest.xml, from which scripts/test-counts.mjs adds pytest's counts to the run's final line. Without
// python3-pytest: under CI=true this fails; elsewhere it is skipped with one loud line. pytest runs /usr/bin/python3
// whatever Node runs Vitest, so CI runs it on its Node 24 leg only (.ci/run keeps that leg's XML).
const once = onceInCi("pytest (python/tests, under /usr/bin/python3)");
const ready = pythonReady();
if (!ready && process.env.CI !== "true") {
  console.warn(
    `== SKIPPED test/python/pytest.test.ts: ${PYTHON} with pytest is missing (apt-get install python3-pytest python3-hypothesis python3-psycopg python3-redis python3-httpx)`,
  );
}
const REPORT = ".tmp/pytest.xml";

describe.skipIf(once.skip || (!ready && process.env.CI !== "true"))(
  `the Python package under pytest${once.label}`,
  () => {
    it("passes every test in python/tests", async () => {
      if (!ready) throw new Error(`${PYTHON} with pytest is missing, and CI=true`);
      mkdirSync(".tmp", { recursive: true });
      rmSync(REPORT, { force: true });
      const child = spawn(
        PYTHON,
        ["-m", "pytest", "python/tests", "-q", "-p", "no:cacheprovider", `--junitxml=${REPORT}`],
        {
          env: {
            ...process.env,
            IDEMKEY_PG_URL: PG_URL,
            IDEMKEY_REDIS_URL: REDIS_URL,
            PYTHONDONTWRITEBYTECODE: "1",
          },
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      let output = "";
      child.stdout.on("data", (chunk) => {
        output += chunk;
      });
      child.stderr.on("data", (chunk) => {
        output += chunk;
      });
      const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
      expect({ code, tail: code === 0 ? "" : output.slice(-6000) }).toEqual({ code: 0, tail: "" });
      const xml = readFileSync(REPORT, "utf8");
      const tests = Number(/<testsuite\b[^>]*\btests="(\d+)"/.exec(xml)?.[1] ?? 0);
      expect(tests).toBeGreaterThan(0);
    }, 240_000);
  },
);
