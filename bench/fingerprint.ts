import { createHash } from "node:crypto";
import { Bench } from "tinybench";
import { canonicalize } from "../src/key/canonicalize.js";
import { requestFingerprint } from "../src/owner/fingerprint.js";
import { medianMicros } from "./key.js";
import { payloads } from "./payloads.js";
import { printTable } from "./table.js";

const decoder = new TextDecoder("utf-8", { fatal: true });

/** What 0.1 did: JSON.parse, RFC 8785 over the doubles (large integers collapse), SHA-256. The baseline. */
const BEFORE = "0.1: JSON.parse + RFC 8785 + SHA-256";
const contenders: Record<string, (bytes: Uint8Array) => unknown> = {
  "exact form from the raw bytes (requestFingerprint)": (bytes) =>
    requestFingerprint("POST", "/charges", "application/json", { bytes }),
  [BEFORE]: (bytes) =>
    createHash("sha256")
      .update(canonicalize(JSON.parse(decoder.decode(bytes))))
      .digest("hex"),
  "floor: SHA-256 of the raw bytes": (bytes) => createHash("sha256").update(bytes).digest("hex"),
};

/** The owner's request fingerprint: the exact JSON form against what 0.1 computed, per body size. */
export async function benchFingerprint(): Promise<void> {
  for (const payload of payloads) {
    const bytes = new TextEncoder().encode(JSON.stringify(payload.value));
    const bench = new Bench({ time: 400, warmup: true, warmupTime: 100 });
    for (const [name, fn] of Object.entries(contenders)) bench.add(name, () => fn(bytes));
    await bench.run();
    const before = medianMicros(bench, BEFORE);
    printTable(
      `request fingerprint, JSON body ${payload.name} (${bytes.byteLength} bytes): median µs`,
      ["contender", "µs", "x 0.1"],
      Object.keys(contenders).map((name) => [
        name,
        medianMicros(bench, name).toFixed(2),
        (medianMicros(bench, name) / before).toFixed(2),
      ]),
    );
  }
}
