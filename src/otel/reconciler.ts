import type { Attributes } from "@opentelemetry/api";
import { createReconciler, type Reconciler } from "../reconciler/create-reconciler.js";
import type { ReconcilerEvent } from "../reconciler/events.js";
import type { ReconcilerOptions } from "../reconciler/options.js";
import { SpanKind, SpanStatusCode } from "./api.js";
import { Attr } from "./attributes.js";
import { instruments, type TelemetryOptions } from "./instruments.js";

/** The telemetry options every bridge takes; `hashKeys` among them. */
export type ReconcilerTelemetryOptions = TelemetryOptions;

/**
 * `createReconciler`, observed: each record it looks at is counted in `idemkey.reconciler.decisions` (by
 * `idemkey.reconcile_outcome` and `gen_ai.tool.name`) and is one span, `reconcile <tool>`, carrying the key (or its
 * hash), the outcome and who decided; a failed one has the error. An `onEvent` in the options is still called.
 *
 * @example
 * const reconciler = tracedReconciler({ store, tools }, { hashKeys: true });
 */
export function tracedReconciler(
  options: ReconcilerOptions,
  telemetry?: ReconcilerTelemetryOptions,
): Reconciler {
  if (typeof options !== "object" || options === null) throw new TypeError("options must be an object");
  const meters = instruments(telemetry);
  const own = options.onEvent;
  return createReconciler({
    ...options,
    onEvent(event) {
      observe(event);
      own?.(event);
    },
  });

  function observe(event: ReconcilerEvent): void {
    const outcome =
      event.type === "reconciled" ? event.outcome : event.type === "undecided" ? "undecided" : event.type;
    const tool = "tool" in event ? event.tool : undefined;
    const counted: Attributes = { [Attr.reconcileOutcome]: outcome };
    if (tool !== undefined) counted[Attr.toolName] = tool;
    meters.reconciled.add(1, counted);
    const attributes: Attributes = { ...counted };
    Object.assign(attributes, meters.keys.attributes(event.key));
    if ("by" in event) attributes[Attr.by] = event.by;
    if ("taskId" in event) attributes[Attr.taskId] = event.taskId;
    const span = meters.startSpan(`reconcile ${tool ?? "record"}`, { kind: SpanKind.INTERNAL, attributes });
    if (event.type === "failed") {
      span.recordException(meters.keys.exception(event.error, [event.key]));
      span.setStatus({
        code: SpanStatusCode.ERROR,
        message: meters.keys.scrub(String(event.error), [event.key]),
      });
    }
    span.end();
  }
}
