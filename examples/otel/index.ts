/**
 * idemkey's OpenTelemetry bridge, offline: spans kept by the SDK's in-memory exporter and printed. A refund is
 * called, called again (a replay: no second refund), and an unguarded transfer fails ambiguously (its outcome is
 * unknown). Each call is an `execute_tool` span under the agent turn's span, with `idemkey.key` and `idemkey.outcome`.
 *
 * Run: npm run example:otel
 */
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
// In an application: from "idemkey" and "idemkey/otel".
import { defineTool, OutcomeUnknownError } from "../../src/index.js";
import { Attr, tracedHarness } from "../../src/otel/index.js";

context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
const exporter = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
trace.setGlobalTracerProvider(tracerProvider);

let refunds = 0;
const refund = defineTool({
  name: "refund",
  effect: "keyed",
  run: async (args: { paymentId: string }) => ({ refund: `re_${++refunds}`, paymentId: args.paymentId }),
});
const transfer = defineTool({
  name: "wire_transfer",
  effect: "unguarded",
  run: async () => {
    throw new Error("socket hang up");
  },
});
const harness = tracedHarness();

await trace.getTracer("agent").startActiveSpan("agent turn", async (turn) => {
  await harness.call("ticket-T-1", refund, { paymentId: "pay_881" });
  await harness.call("ticket-T-1", refund, { paymentId: "pay_881" });
  await harness.call("ticket-T-1", transfer, { cents: 100 }).catch((e) => {
    if (!(e instanceof OutcomeUnknownError)) throw e;
  });
  turn.end();
});

for (const span of exporter.getFinishedSpans()) {
  const outcome = span.attributes[Attr.outcome];
  const key = String(span.attributes[Attr.key] ?? "").slice(0, 12);
  const parent = span.parentSpanContext?.spanId ?? "-";
  console.log(
    `${span.name.padEnd(26)} outcome=${String(outcome ?? "-").padEnd(15)} key=${key || "-"} parent=${parent}`,
  );
}
await tracerProvider.shutdown();

console.log(`Refunds made: ${refunds}`);
if (refunds !== 1) process.exitCode = 1;
