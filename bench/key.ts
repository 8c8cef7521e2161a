import { createHash, hash } from "node:crypto";
import canonicalizePackage from "canonicalize";
import type { Bench } from "tinybench";
import { DEFAULT_MAX_DEPTH } from "../src/key/canonicalize.js";
import { callKeys, idempotencyKey } from "../src/key/idempotency-key.js";
import { referenceCanonicalize } from "../test/key/support/reference-canonicalize.js";
import { oneOffShapes, payloads } from "./payloads.js";
import { inRounds } from "./rounds.js";
import { printTable } from "./table.js";

const sortingReplacer = (_key: string, value: unknown) => {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return value;
  const sorted: Record<string, unknown> = {};
  for (const name of Object.keys(value).sort()) sorted[name] = (value as Record<string, unknown>)[name];
  return sorted;
};

/** What harness.call derives per call without a tool identity: the canonical args (recorded), the key, the args hash. */
function harnessPath(args: unknown): string {
  const derived = callKeys("task-8812", "placeOrder", args, undefined, DEFAULT_MAX_DEPTH, undefined);
  return derived.key + derived.argsHash;
}

const contenders = {
  "idemkey idempotencyKey": (args: unknown) => idempotencyKey("task-8812", "placeOrder", args),
  "idemkey harness path (args text, key, args hash)": harnessPath,
  "naive: sorting replacer + createHash": (args: unknown) =>
    createHash("sha256")
      .update(JSON.stringify(["task-8812", "placeOrder", args], sortingReplacer))
      .digest("hex"),
  "canonicalize package + crypto.hash": (args: unknown) =>
    hash("sha256", canonicalizePackage(["task-8812", "placeOrder", args]) as string, "hex"),
  // The serializer of 0.1, kept as the test suite's reference: the new one must never be slower than it.
  "0.1 serializer + crypto.hash": (args: unknown) =>
    hash("sha256", referenceCanonicalize(["task-8812", "placeOrder", args]), "hex"),
  "floor: JSON.stringify + crypto.hash": (args: unknown) =>
    hash("sha256", JSON.stringify(["task-8812", "placeOrder", args]), "hex"),
};
const FLOOR = "floor: JSON.stringify + crypto.hash";

/** tinybench reports milliseconds; a task that errored has no statistics, which must not pass for a fast one. */
export function medianMicros(bench: Bench, name: string): number {
  const result = bench.getTask(name)?.result;
  if (!result || !("latency" in result)) throw new Error(`bench task "${name}" produced no statistics`);
  return result.latency.p50 * 1000;
}

export async function benchKey(): Promise<void> {
  let turn = 0;
  const oneOff = () => oneOffShapes[turn++ % oneOffShapes.length];
  const cases = [
    ...payloads.map((payload) => ({ name: payload.name, next: () => payload.value })),
    { name: "~1 KB, member names new every call", next: oneOff },
  ];
  for (const payload of cases) {
    const size = Buffer.byteLength(JSON.stringify(payload.next()));
    // Short slices in turn, round after round, so that the machine's drifting load falls on every contender alike.
    const results = await inRounds(
      Object.fromEntries(
        Object.entries(contenders).map(([name, fn]) => [name, () => fn(payload.next())] as const),
      ),
      { rounds: 7, sliceMs: 150 },
    );
    const median = (name: string) => results.get(name)!.p50;
    const floor = median(FLOOR);
    printTable(
      `key derivation, payload ${payload.name} (${size} bytes of JSON): median µs per key`,
      ["contender", "µs/key", "x floor"],
      Object.keys(contenders).map((name) => [
        name,
        median(name).toFixed(2),
        (median(name) / floor).toFixed(2),
      ]),
    );
  }
}
