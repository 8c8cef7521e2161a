import { existsSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { UsageError } from "./errors.js";

/**
 * Imports what a flag names: a file where there is one (`drivers/kv.js` too, which Node would take for a package),
 * else a package. A module that does not import is the caller's mistake: one line naming the flag.
 */
export async function importModule(flag: string, spec: string): Promise<Record<string, unknown>> {
  const path = isAbsolute(spec) || existsSync(resolve(spec)) ? pathToFileURL(resolve(spec)).href : spec;
  try {
    return (await import(path)) as Record<string, unknown>;
  } catch (error) {
    throw new UsageError(`${flag} ${spec}: cannot import it: ${(error as Error).message.split("\n")[0]}`);
  }
}
