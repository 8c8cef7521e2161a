import { describe } from "./describe.js";

/** What a numeric option may be. After p-retry's `validateNumberOption`: one check, its message built from the rule. */
export interface NumberRule {
  /** The smallest value allowed. @default 0 */
  readonly min?: number;
  /** Excludes `min` itself (`> 0` rather than `>= 0`). @default false */
  readonly exclusive?: boolean;
  /** The largest value allowed. @default none */
  readonly max?: number;
  /** Only safe integers (counts, sizes, ports). @default false */
  readonly integer?: boolean;
  /** Allows `Infinity`, for an option where it means "no limit". @default false */
  readonly infinite?: boolean;
}

/**
 * `value` when it keeps `rule`, else a `TypeError` naming the option: `options.leaseMs must be a finite number > 0,
 * got -1`. `name` is printed as given (`options.retry.retries`, `redisStore: options.ttlMarginMs`).
 */
export function checkNumber(name: string, value: unknown, rule: NumberRule = {}): number {
  const { min = 0, exclusive = false, max, integer = false, infinite = false } = rule;
  const ok =
    typeof value === "number" &&
    (integer ? Number.isSafeInteger(value) : infinite ? !Number.isNaN(value) : Number.isFinite(value)) &&
    (exclusive ? value > min : value >= min) &&
    (max === undefined || value <= max);
  if (!ok) throw new TypeError(`${name} must be ${wanted(rule)}, got ${describe(value)}`);
  return value;
}

/** `checkNumber` for an optional option: `fallback` when it is `undefined`. */
export function numberOption(name: string, value: unknown, fallback: number, rule: NumberRule = {}): number {
  return value === undefined ? fallback : checkNumber(name, value, rule);
}

function wanted({ min = 0, exclusive = false, max, integer = false, infinite = false }: NumberRule): string {
  if (integer && max !== undefined && !exclusive) return `an integer from ${min} to ${max}`;
  const kind = integer ? "an integer" : infinite ? "a number" : "a finite number";
  return `${kind} ${exclusive ? ">" : ">="} ${min}${max === undefined ? "" : ` and <= ${max}`}`;
}
