// Writes python/idemkey/redis_scripts.py from src/redis/scripts.ts and layout.ts: the Python Redis store runs the
// TypeScript store's Lua scripts verbatim (test/python/redis-scripts.test.ts fails until this has been run after a
// change of them). Run: npx tsx scripts/make-python-redis-scripts.ts
import { writeFileSync } from "node:fs";
import { LAYOUT } from "../src/redis/layout.js";
import { CLAIM, DELETE, FIELDS, GET, LIST, NOW, PURGE, UPDATE } from "../src/redis/scripts.js";

const SCRIPTS = { CLAIM, UPDATE, DELETE, GET, LIST, PURGE, NOW };
// The layout marker check of src/redis/layout.ts, which the Python store runs before its first command.
const CHECK =
  "\nlocal found = redis.call('GET', KEYS[1])\nif found then return tonumber(found) end\nif redis.call('ZCARD', KEYS[2]) > 0 then return 1 end\nredis.call('SET', KEYS[1], ARGV[1])\nreturn tonumber(ARGV[1])\n";

const lines = [
  `"""The Lua scripts of the Redis store, verbatim from the TypeScript src/redis/scripts.ts (layout ${LAYOUT}).`,
  "",
  "Generated from that file by scripts/make-python-redis-scripts.ts; test/python/redis-scripts.test.ts checks that",
  "they are still the same text, so a change of the TypeScript scripts fails CI until this copy is made again. Do not",
  "edit by hand.",
  '"""',
  "",
  "# fmt: off",
  `LAYOUT = ${LAYOUT}`,
  `FIELDS = ${JSON.stringify([...FIELDS])}`,
  "",
  ...Object.entries(SCRIPTS).flatMap(([name, text]) => [`${name} = ${JSON.stringify(text)}`, ""]),
  "# The layout marker check (src/redis/layout.ts).",
  `CHECK = ${JSON.stringify(CHECK)}`,
];
writeFileSync(new URL("../python/idemkey/redis_scripts.py", import.meta.url), `${lines.join("\n")}\n`);
