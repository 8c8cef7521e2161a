import type { StoreRecord } from "../store/types.js";

/**
 * Layout 3, the store without indexes (`indexes: false`): a record is one Redis string of ten lines, so that a new
 * key is claimed by a plain `SET ... NX` and no script. In order: state, token, leaseUntil, attempts, createdAt,
 * updatedAt, expiresAt, fingerprint, result, data. The four strings a caller chooses (token, fingerprint, result,
 * data) are JSON string literals, which never hold a raw newline, so the lines split unambiguously and Lua moves
 * them without decoding; an empty line is null. Times are epoch ms, or `+N`: N ms after the instant the record was
 * created, which only Redis knew when a plain `SET` wrote it. That instant is the key's expiry (`PEXPIRETIME`, on
 * Redis's clock) less expiresAt's N: without a `clock` option the key's physical expiry is its logical one.
 */
export const LEAN_LAYOUT = 3;

/** Line numbers (1-based, as in Lua) of the fields; the scripts use the same numbers. */
export const LINE = {
  state: 1,
  token: 2,
  leaseUntil: 3,
  attempts: 4,
  createdAt: 5,
  updatedAt: 6,
  expiresAt: 7,
  fingerprint: 8,
  result: 9,
  data: 10,
} as const;

export const text = (value: string | null | undefined): string =>
  value == null ? "" : JSON.stringify(value);
const untext = (line: string): string | null => (line === "" ? null : (JSON.parse(line) as string));

/**
 * A new record's value. `now` undefined (Redis's clock decides) writes its times relative to its creation; a
 * `clock` option's instant writes them as they are.
 */
export function freshValue(
  state: string,
  input: { fingerprint: string; token: string; leaseMs: number; ttlMs: number; data?: string | null },
  now: number | undefined,
): string {
  const at = (ms: number) => (now === undefined ? `+${ms}` : `${now + ms}`);
  const lease = state === "pending" ? at(input.leaseMs) : "";
  return `${state}\n${text(input.token)}\n${lease}\n0\n${at(0)}\n${at(0)}\n${at(input.ttlMs)}\n${text(input.fingerprint)}\n\n${text(input.data)}`;
}

/**
 * The record of a value. A relative one needs the key's expiry (`PEXPIRETIME`); without it (`expiry` undefined)
 * the record cannot be placed in time and `undefined` is returned.
 */
export function fromValue(key: string, value: string, expiry?: number): StoreRecord | undefined {
  const f = value.split("\n");
  // Only the data line may hold more (it never does: JSON.stringify escapes newlines), so keep the tail whole.
  if (f.length > 10) f[9] = f.slice(9).join("\n");
  let base = 0;
  if (f[6]!.startsWith("+")) {
    if (expiry === undefined) return undefined;
    base = expiry - Number(f[6]!.slice(1));
  }
  const time = (line: string) => (line.startsWith("+") ? base + Number(line.slice(1)) : Number(line));
  return {
    key,
    state: f[0] as StoreRecord["state"],
    token: untext(f[1]!),
    leaseUntil: f[2] === "" ? null : time(f[2]!),
    attempts: Number(f[3]),
    createdAt: time(f[4]!),
    updatedAt: time(f[5]!),
    expiresAt: time(f[6]!),
    fingerprint: untext(f[7]!)!,
    result: untext(f[8]!),
    data: untext(f[9]!),
  };
}
