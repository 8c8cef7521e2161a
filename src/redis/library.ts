import { createHash } from "node:crypto";
import { type FunctionLibrary, type Script, script } from "./client.js";
import { LAYOUT } from "./layout.js";
import { BODIES, CHANGES, CLAIM, CREATE, DELETE, GET, LIST, NOW, PURGE, READ, UPDATE } from "./scripts.js";

type Name = keyof typeof BODIES;

/** The scripts as EVAL runs them (the fallback, and the Python store's copy). */
const SOURCES: Record<Name, string> = {
  claim: CLAIM,
  update: UPDATE,
  delete: DELETE,
  get: GET,
  list: LIST,
  changes: CHANGES,
  purge: PURGE,
  now: NOW,
};

/** Scripts that write nothing: flagged `no-writes` and called by FCALL_RO, so Redis runs them even under OOM. */
const READ_ONLY: ReadonlySet<Name> = new Set(["get", "list", "changes", "now"]);

/**
 * The store's scripts as one Redis 7 function library: READ's and CREATE's helpers defined once, when the library
 * loads, and each script a function of `(KEYS, ARGV)` whose body is the script's own text. The library's name, and
 * every function's, carries the layout and a hash of that text (`idemkey_2_<12 hex>`), so that two versions of
 * idemkey on one server each load their own library and never replace the other's (function names are global in
 * Redis, hence the hash in them too).
 */
function build(): { library: FunctionLibrary; scripts: Record<Name, Script> } {
  const names = Object.keys(BODIES) as Name[];
  const text = `${READ}${CREATE}${names.map((n) => `${n}${READ_ONLY.has(n) ? " ro" : ""}${BODIES[n]}`).join("")}`;
  const name = `idemkey_${LAYOUT}_${createHash("sha1").update(text).digest("hex").slice(0, 12)}`;
  const register = (n: Name) =>
    `redis.register_function{function_name='${name}_${n}', callback=function(KEYS, ARGV)${BODIES[n]}end` +
    `${READ_ONLY.has(n) ? ", flags={'no-writes'}" : ""}}`;
  const code = `#!lua name=${name}\n${READ}${CREATE}\n${names.map(register).join("\n")}\n`;
  const scripts = {} as Record<Name, Script>;
  for (const n of names) {
    scripts[n] = { ...script(SOURCES[n]), fn: `${name}_${n}`, readOnly: READ_ONLY.has(n) };
  }
  return { library: { name, code }, scripts };
}

export const { library, scripts } = build();
