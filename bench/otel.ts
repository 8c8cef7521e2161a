import { context } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, NoopSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { createHarness } from "../src/harness/index.js";
import { tracedHarness } from "../src/otel/index.js";
import { memoryStore } from "../src/store/index.js";
import { noop } from "./harness.js";
import { inRounds } from "./rounds.js";
import { printTable } from "./table.js";

class IdleReader extends MetricReader {
  protected async onForceFlush() {}
  protected async onShutdown() {}
}

/**
 * What `idemkey/otel` adds per call on the memory store, beside the bare harness: with the global no-op providers (the
 * API installed, no SDK registered; the context manager is on for all three, as the bare harness never reads it) and with a recording SDK (an AsyncLocalStorage context manager, spans recorded and dropped
 * by a no-op processor, counters aggregated), for a fresh key and for a replay.
 */
export async function benchOtel(): Promise<void> {
  const manager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(manager);
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new NoopSpanProcessor()] });
  const meterProvider = new MeterProvider({ readers: [new IdleReader()] });
  const harnesses = {
    bare: createHarness({ store: memoryStore() }),
    "otel, no SDK": tracedHarness({ store: memoryStore() }),
    "otel, SDK": tracedHarness({ store: memoryStore() }, { tracerProvider, meterProvider }),
  };
  const REPLAYS = 1000;
  const tasks: Record<string, () => Promise<unknown>> = {};
  for (const [name, harness] of Object.entries(harnesses)) {
    for (let i = 0; i < REPLAYS; i++) await harness.call("bench-replay", noop, { n: i });
    let fresh = 0;
    let replay = 0;
    tasks[`${name}|fresh key`] = () => harness.call("bench-fresh", noop, { n: fresh++ });
    tasks[`${name}|replay`] = () => harness.call("bench-replay", noop, { n: replay++ % REPLAYS });
  }
  const latency = await inRounds(tasks);
  const rows: string[][] = [];
  for (const [task, l] of latency) {
    const [name, call] = task.split("|") as [string, string];
    const base = latency.get(`bare|${call}`)!;
    rows.push([
      name,
      call,
      l.p50.toFixed(1),
      l.p99.toFixed(1),
      `${(l.p50 - base.p50).toFixed(1)}`,
      `${(l.p50 / base.p50).toFixed(2)}x`,
    ]);
  }
  printTable(
    "idemkey/otel overhead per harness.call, memory store, no-op keyed tool (µs per call)",
    ["harness", "call", "p50", "p99", "+p50", "vs bare"],
    rows,
  );
  context.disable();
  await tracerProvider.shutdown();
  await meterProvider.shutdown();
}
