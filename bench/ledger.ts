import { Bench } from "tinybench";
import { addEvent, encodeData, newCall, PREFIX, toEntry } from "../src/harness/ledger.js";
import type { LedgerVersion } from "../src/harness/record/types.js";
import { canonicalize } from "../src/key/canonicalize.js";
import type { StoreRecord } from "../src/store/types.js";
import { medianMicros } from "./key.js";
import { payloads } from "./payloads.js";
import { printTable } from "./table.js";

function recordOf(data: string): StoreRecord {
  const at = 1_700_000_000_000;
  return {
    key: `${PREFIX}${"a".repeat(64)}`,
    fingerprint: "a".repeat(64),
    state: "completed",
    token: null,
    leaseUntil: null,
    attempts: 1,
    result: "{}",
    data,
    createdAt: at,
    updatedAt: at,
    expiresAt: at + 60_000,
  };
}

/**
 * Ledger formats 1 and 2 side by side, per argument size: the bytes of a record, writing it (`encodeData`) and
 * reading it as `harness.get` and the inspector do (`toEntry`; format 2 rebuilds the canonical text of the args).
 */
export async function benchLedger(): Promise<void> {
  const versions: LedgerVersion[] = [1, 2];
  for (const payload of payloads.filter((p) => !p.name.includes("already in order"))) {
    const call = addEvent(
      newCall({
        taskId: "task-8812",
        tool: "charge",
        effect: "keyed",
        argsHash: "b".repeat(64),
        args: canonicalize(payload.value),
      }),
      { type: "approval_requested", at: 1_700_000_000_000 },
    );
    const bench = new Bench({ time: 400, warmup: true, warmupTime: 100 });
    const texts = new Map(versions.map((v) => [v, encodeData(call, v)]));
    for (const v of versions) {
      const record = recordOf(texts.get(v)!);
      bench.add(`write v${v}`, () => encodeData(call, v));
      bench.add(`read v${v}`, () => toEntry(record));
    }
    await bench.run();
    const bytes1 = texts.get(1)!.length;
    printTable(
      `ledger record, args ${payload.name}: bytes and median µs (x = against format 1)`,
      ["format", "bytes", "x", "write µs", "x", "read µs", "x"],
      versions.map((v) => {
        const bytes = texts.get(v)!.length;
        const write = medianMicros(bench, `write v${v}`);
        const read = medianMicros(bench, `read v${v}`);
        return [
          `v${v}`,
          String(bytes),
          (bytes / bytes1).toFixed(2),
          write.toFixed(2),
          (write / medianMicros(bench, "write v1")).toFixed(2),
          read.toFixed(2),
          (read / medianMicros(bench, "read v1")).toFixed(2),
        ];
      }),
    );
  }
}
