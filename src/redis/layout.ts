import { StoreLayoutError } from "../errors/store-layout-error.js";
import { type ScriptRunner, script } from "./client.js";

/** The record layout this store reads and writes (see scripts.ts); layout 1 kept each record as a JSON string. */
export const LAYOUT = 2;

/**
 * KEYS: the marker key, the key index. ARGV: this layout. Returns the layout recorded under the prefix, marking an
 * empty prefix with this one. A prefix with index entries and no marker was written by layout 1, which had none.
 */
const CHECK = script(`
local found = redis.call('GET', KEYS[1])
if found then return tonumber(found) end
if redis.call('ZCARD', KEYS[2]) > 0 then return 1 end
redis.call('SET', KEYS[1], ARGV[1])
return tonumber(ARGV[1])
`);

/**
 * Checks the prefix's layout once, before the store's first operation; a failed check (an unreachable server) is
 * tried again by the next operation. A process of another layout writing under the prefix later still cannot be
 * misread: every script refuses a record of the wrong Redis type with an `IDEMKEY_LAYOUT` error.
 */
export function layoutCheck(redis: ScriptRunner, prefix: string): { done: boolean; check(): Promise<void> } {
  let checking: Promise<void> | undefined;
  const state = {
    // Read before every operation, so that a checked store awaits nothing more.
    done: false,
    check() {
      checking ??= redis.run(CHECK, [`${prefix}layout`, `${prefix}keys`], [`${LAYOUT}`]).then(
        (found) => {
          if (Number(found) !== LAYOUT) throw new StoreLayoutError("redis", prefix, Number(found), LAYOUT);
          state.done = true;
        },
        (error: unknown) => {
          checking = undefined;
          throw error;
        },
      );
      return checking;
    },
  };
  return state;
}
