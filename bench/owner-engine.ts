import { engineDriver } from "./engine-driver.js";
import { inRounds } from "./rounds.js";
import { openStore, type StoreName } from "./stores.js";
import { printTable } from "./table.js";

const encoder = new TextEncoder();
const REQUEST_BODY = encoder.encode(JSON.stringify({ amount: 1999, currency: "eur", customer: "cus_91xk2" }));
const RESPONSE_BODY = encoder.encode(JSON.stringify({ id: "ch_1", amount: 1999, currency: "eur" }));
const HEADERS: [string, string][] = [
  ["content-type", "application/json"],
  ["content-length", String(RESPONSE_BODY.byteLength)],
];
const REPLAYS = 100;

/**
 * The framework-agnostic engine behind every adapter, without HTTP: `begin` and `lock.finish` for a new key, `begin`
 * for a completed one. What the middleware costs beyond this is the adapter's and the framework's.
 */
export async function benchOwnerEngine(stores: readonly StoreName[]): Promise<void> {
  const rows: string[][] = [];
  for (const name of stores) {
    const opened = await openStore(name);
    if (opened === undefined) continue;
    const engine = engineDriver("engine bench", opened.store, REQUEST_BODY, {
      headers: HEADERS,
      body: RESPONSE_BODY,
    });
    for (let i = 0; i < REPLAYS; i++) await engine.fresh(`replay-${i}`);
    let next = 0;
    let replay = 0;
    const latency = await inRounds(
      {
        "fresh key": () => engine.fresh(`fresh-${next++}`),
        replay: () => engine.replay(`replay-${replay++ % REPLAYS}`),
      },
      { rounds: 4, sliceMs: 250 },
    );
    for (const [kind, l] of latency) {
      rows.push([name, kind, l.p50.toFixed(1), l.p99.toFixed(1), l.mean.toFixed(1)]);
    }
    await opened.close();
  }
  printTable(
    "idemkey owner engine without HTTP (begin + finish; replay: begin): µs per request",
    ["store", "request", "p50", "p99", "mean"],
    rows,
  );
}
