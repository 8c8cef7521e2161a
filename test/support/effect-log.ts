import { appendFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * The independent record of side effects: the fake owner appends one line per effect to a file the code under test
 * never sees, so a count read back from it cannot be fooled by the ledger or the middleware.
 */
export function effectLog(name = "effects") {
  const dir = mkdtempSync(join(tmpdir(), "idemkey-effects-"));
  const file = join(dir, `${name}.log`);
  appendFileSync(file, "");
  return {
    file,
    /** Records one effect for `key`. */
    effect(key: string): void {
      appendFileSync(file, `${key}\n`);
    },
    /** How many effects `key` had (all keys when none is given). */
    count(key?: string): number {
      const lines = readFileSync(file, "utf8").split("\n").filter(Boolean);
      return key === undefined ? lines.length : lines.filter((line) => line === key).length;
    },
    cleanup(): void {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
