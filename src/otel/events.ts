import type { Attributes } from "@opentelemetry/api";
import type { HarnessEvent } from "../harness/types.js";
import { SpanKind } from "./api.js";
import { Attr } from "./attributes.js";
import { type Instruments, instruments, type TelemetryOptions } from "./instruments.js";

/**
 * An `onEvent` that counts the decisions a person makes outside any call: each `resolve` of an unknown outcome is
 * one `idemkey.resolutions` (by `idemkey.resolved_how`, `result` or `retry`) and one span `resolve <tool>` with
 * `idemkey.by`. `tracedHarness` does this for its own `harness.resolve`; this is for the inspector, which resolves
 * through a harness of its own. Other events are left to `tracedHarness`.
 *
 * @example createInspector({ store, onEvent: tracedEvents({ hashKeys: true }) })
 */
export function tracedEvents(telemetry?: TelemetryOptions): (event: HarnessEvent) => void {
  const meters = instruments(telemetry);
  return function onEvent(event) {
    if (event.type === "resolved") resolvedOutsideCall(meters, event);
  };
}

/** `harness.resolve`, made by a person or the inspector outside any call: a span of its own and a count. */
export function resolvedOutsideCall(
  meters: Instruments,
  event: Extract<HarnessEvent, { type: "resolved" }>,
): void {
  const counted: Attributes = { [Attr.toolName]: event.tool, [Attr.resolvedHow]: event.how };
  meters.resolutions.add(1, counted);
  const attributes: Attributes = {
    ...counted,
    ...meters.keys.attributes(event.key),
    [Attr.taskId]: event.taskId,
  };
  if (event.by !== undefined) attributes[Attr.by] = event.by;
  meters.startSpan(`resolve ${event.tool}`, { kind: SpanKind.INTERNAL, attributes }).end();
}
