import { StoreLayoutError } from "../errors/store-layout-error.js";
import { type ScriptRunner, script } from "./client.js";
import { LEAN_LAYOUT } from "./lean-value.js";

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

/** The `redisStore` setting that writes `layout`, for a layout of this version: 2 and 3 are one version's two kinds. */
export function layoutOption(layout: number): string | undefined {
  if (layout === LEAN_LAYOUT) return "indexes: false";
  if (layout === LAYOUT) return "indexes: true (the default)";
  return undefined;
}

/**
 * Checks the prefix's layout once, before the store's first operation; a failed check (an unreachable server) is
 * tried again by the next operation. A process of another layout writing under the prefix later still cannot be
 * misread: every script refuses a record of the wrong Redis type with an `IDEMKEY_LAYOUT` error. `layout` is 3 for
 * the store without indexes (strings, see lean-value.ts), so that neither kind of store reads the other's prefix.
 */
export function layoutCheck(
  redis: ScriptRunner,
  prefix: string,
  layout: number = LAYOUT,
): { done: boolean; check(): Promise<void> } {
  let checking: Promise<void> | undefined;
  const state = {
    // Read before every operation, so that a checked store awaits nothing more.
    done: false,
    check() {
      checking ??= redis.run(CHECK, [`${prefix}layout`, `${prefix}keys`], [`${layout}`]).then(
        (found) => {
          if (Number(found) !== layout)
            throw new StoreLayoutError({
              store: "redis",
              location: prefix,
              found: Number(found),
              supported: layout,
              option: layoutOption(Number(found)),
            });
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
