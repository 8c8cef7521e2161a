import type { Attributes } from "@opentelemetry/api";
import { REFUSAL_META, REPLAYED_META, Refusal } from "../mcp/meta.js";
import type { McpDedupe } from "../mcp/server/dedupe.js";
import type { McpHandlerExtra } from "../mcp/server/dedupe-options.js";
import { idempotencyKeyOf } from "../mcp/server/read-key.js";
import { SpanKind, SpanStatusCode } from "./api.js";
import { Attr, Outcome } from "./attributes.js";
import { instruments, type TelemetryOptions } from "./instruments.js";
import { countRefusal } from "./owner-refusal.js";

/**
 * `mcpDedupe`'s wrapper, traced: each tool call the server receives is a span named `execute_tool <tool>` carrying
 * the key from the call's `_meta` (`idemkey.key`) and `idemkey.outcome`: `executed` when the handler ran, `replayed`
 * when the saved result was sent, `refused` (with `idemkey.refusal`) when the call was refused without running. The
 * span is a child of the span active when the SDK called the handler. Counted in `idemkey.calls`, `idemkey.replays`,
 * `idemkey.conflicts` (`key_reused`), `idemkey.in_flight` and `idemkey.outcome_unknown`; with `hashKeys`, the key is
 * written as its SHA-256.
 *
 * @example
 * const idempotent = tracedMcpDedupe(mcpDedupe({ store }));
 * server.registerTool("create_issue", { inputSchema }, idempotent("create_issue", createIssue));
 */
export function tracedMcpDedupe<Extra extends McpHandlerExtra>(
  dedupe: McpDedupe<Extra>,
  telemetry?: TelemetryOptions,
): McpDedupe<Extra> {
  if (typeof dedupe !== "function") throw new TypeError("dedupe must be what mcpDedupe() returned");
  const meters = instruments(telemetry);
  return function traced(name, handler) {
    const wrapped = dedupe(name, handler);
    return (args, extra) => {
      const attributes: Attributes = { [Attr.operationName]: "execute_tool", [Attr.toolName]: name };
      let key: string | undefined;
      try {
        key = idempotencyKeyOf(extra);
        if (key !== undefined) Object.assign(attributes, meters.keys.attributes(key));
      } catch {
        // An invalid key: mcpDedupe refuses the call, and the span says so.
      }
      const span = meters.startSpan(`execute_tool ${name}`, { kind: SpanKind.SERVER, attributes });
      return meters.withSpan(span, async () => {
        try {
          const result = await wrapped(args, extra);
          const meta = result._meta ?? {};
          const refusal = meta[REFUSAL_META];
          // A key taken over from a server that stopped mid-call is refused as outcome-unknown: say so by name.
          const outcome =
            refusal === Refusal.outcomeUnknown
              ? Outcome.outcomeUnknown
              : refusal !== undefined
                ? Outcome.refused
                : meta[REPLAYED_META] === true
                  ? Outcome.replayed
                  : Outcome.executed;
          if (refusal !== undefined) span.setAttribute(Attr.refusal, String(refusal));
          countRefusal(meters, refusal as Refusal | undefined, { [Attr.toolName]: name });
          if (outcome === Outcome.replayed) meters.replays.add(1, { [Attr.toolName]: name });
          if (result.isError === true) span.setStatus({ code: SpanStatusCode.ERROR });
          span.setAttribute(Attr.outcome, outcome);
          meters.calls.add(1, { [Attr.toolName]: name, [Attr.outcome]: outcome });
          return result;
        } catch (error) {
          span.recordException(meters.keys.exception(error, [key]));
          span.setStatus({ code: SpanStatusCode.ERROR, message: meters.keys.scrub(String(error), [key]) });
          span.setAttribute(Attr.outcome, Outcome.failed);
          meters.calls.add(1, { [Attr.toolName]: name, [Attr.outcome]: Outcome.failed });
          throw error;
        } finally {
          span.end();
        }
      });
    };
  };
}
