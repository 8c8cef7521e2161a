import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { LAYOUT } from "../../src/redis/layout.js";
import * as scripts from "../../src/redis/scripts.js";
import { PYTHON, requirePython, skipWithoutPython } from "./support.js";

// The Python Redis store runs a copy of the TypeScript store's Lua scripts (python/idemkey/redis_scripts.py): the
// same text, or the two languages would write the same prefix differently. A change of the TypeScript layout fails
// here until the copy is made again (npx tsx scripts/make-python-redis-scripts.ts; a new layout also needs
// docs/ledger-format.md's Redis section to say it).
describe.skipIf(skipWithoutPython("test/python/redis-scripts.test.ts"))(
  "the Python Redis store's Lua scripts",
  () => {
    it("are the TypeScript store's, verbatim, for the same layout", () => {
      requirePython();
      const python = JSON.parse(
        execFileSync(PYTHON, [
          "-c",
          "import json, sys; sys.path.insert(0, 'python'); from idemkey import redis_scripts as r; " +
            "print(json.dumps({n: getattr(r, n) for n in ['CLAIM','UPDATE','DELETE','GET','LIST','PURGE','NOW','FIELDS','LAYOUT']}))",
        ]).toString(),
      ) as Record<string, unknown>;
      expect(python).toEqual({
        CLAIM: scripts.CLAIM,
        UPDATE: scripts.UPDATE,
        DELETE: scripts.DELETE,
        GET: scripts.GET,
        LIST: scripts.LIST,
        PURGE: scripts.PURGE,
        NOW: scripts.NOW,
        FIELDS: [...scripts.FIELDS],
        LAYOUT,
      });
    });
  },
);
