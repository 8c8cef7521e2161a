import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CanonicalizationError } from "../../src/errors/canonicalization-error.js";
import { idempotencyKey } from "../../src/key/index.js";
import { PYTHON, requirePython, skipWithoutPython } from "./support.js";

type Case = { taskId: string; tool: string; args: unknown; step?: string | number };
type Answer = { key: string } | { path: string; reason: string };

const dir = mkdtempSync(join(tmpdir(), "idemkey-corpus-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function typescriptAnswer(c: Case): Answer {
  try {
    return { key: idempotencyKey(c.taskId, c.tool, c.args, c.step === undefined ? {} : { step: c.step }) };
  } catch (error) {
    if (!(error instanceof CanonicalizationError)) throw error;
    return { path: error.path, reason: error.reason };
  }
}

describe.skipIf(skipWithoutPython("test/python/keys-corpus.test.ts"))(
  "Python and TypeScript keys on one generated corpus",
  () => {
    it("give the same key, or the same refusal at the same path, for 3000 seeded calls", () => {
      requirePython();
      const corpus = join(dir, "corpus.json");
      const keys = join(dir, "py-keys.json");
      // Python writes the corpus (seeded) and its own keys, read back from the file as TypeScript reads it.
      execFileSync(PYTHON, [
        "python/tests/corpus.py",
        "--seed",
        "47",
        "--count",
        "3000",
        "--out",
        corpus,
        "--keys",
        keys,
      ]);
      const cases = JSON.parse(readFileSync(corpus, "utf8")) as Case[];
      const python = JSON.parse(readFileSync(keys, "utf8")) as Answer[];
      expect(cases).toHaveLength(3000);
      expect(python).toHaveLength(3000);
      const differ: unknown[] = [];
      let refused = 0;
      cases.forEach((c, i) => {
        const ts = typescriptAnswer(c);
        if ("path" in ts) refused++;
        if (JSON.stringify(ts) !== JSON.stringify(python[i]))
          differ.push({ i, case: c, ts, python: python[i] });
      });
      expect(differ.slice(0, 3)).toEqual([]);
      // The corpus does hold refusals (lone surrogates in names and values), and mostly keys.
      expect(refused).toBeGreaterThan(20);
      expect(refused).toBeLessThan(300);
    });
  },
);
