import type { Attributes, Context, Span } from "@opentelemetry/api";
import { ApprovalDeniedError } from "../errors/approval-denied-error.js";
import { isIdempotencyConflictError } from "../errors/guards.js";
import { OutcomeUnknownError } from "../errors/outcome-unknown-error.js";
import { createHarness } from "../harness/create-harness.js";
import { defineTool, isTool } from "../harness/define-tool.js";
import type { HarnessOptions } from "../harness/options.js";
import type { CallOptions, CallOutcome, Harness, HarnessEvent, Tool } from "../harness/types.js";
import { sha256Hex } from "../key/idempotency-key.js";
import { context, createContextKey, propagation, SpanKind, SpanStatusCode } from "./api.js";
import { Attr, KEY_BAGGAGE, KEY_HASH_BAGGAGE, Outcome } from "./attributes.js";
import { resolvedOutsideCall } from "./events.js";
import { type Instruments, instruments, type TelemetryOptions } from "./instruments.js";

/** What one traced call learns from the harness's events, found through the call's own context. */
interface CallState {
  span: Span;
  /** The call's key, once an event named it: what `hashKeys` scrubs from error messages. */
  key: string | undefined;
  executed: boolean;
  replayed: boolean;
  waited: boolean;
  takenOver: boolean;
}

const CALL = createContextKey("idemkey call");

/**
 * `createHarness`, traced: every `harness.call` is an OpenTelemetry span named `execute_tool <tool>` (the GenAI
 * conventions' name and `gen_ai.*` attributes) carrying `idemkey.key`, `idemkey.outcome`, `idemkey.attempt` and
 * `idemkey.effect`, a child of the span active where `call` was made. The tool runs inside that span, with the key in
 * the W3C baggage (`idemkey.key`), so a propagator sends it on with the request to the owner. The harness's events
 * become span events and counters (`idemkey.calls`, `idemkey.replays`, `idemkey.takeovers`, `idemkey.waits`,
 * `idemkey.outcome_unknown`, `idemkey.conflicts` for a call that ended in `IdempotencyConflictError`,
 * `idemkey.resolutions` for an unknown outcome resolved). `harness.resolve` (a person, or the inspector acting for
 * one) is a span of its own, `resolve <tool>`, counted in `idemkey.resolutions` with `idemkey.resolved_how` `result`
 * or `retry`. With `hashKeys`, the key is written as its SHA-256 everywhere, the baggage included. An `onEvent` in
 * the options is still called.
 *
 * It is built on the harness's public `onEvent` hook and wraps `call`; nothing in `idemkey` itself knows about it,
 * so an application that does not import `idemkey/otel` pays nothing.
 *
 * @example
 * const harness = tracedHarness({ store: sqliteStore("./ledger.db") });
 */
export function tracedHarness(options?: HarnessOptions, telemetry?: TelemetryOptions): Harness {
  if (options !== undefined && (typeof options !== "object" || options === null)) {
    throw new TypeError("options must be an object");
  }
  const meters = instruments(telemetry);
  const own = options?.onEvent;
  const harness = createHarness({
    ...options,
    onEvent(event) {
      const state = context.active().getValue(CALL) as CallState | undefined;
      if (state !== undefined) observe(meters, state, event);
      else if (event.type === "resolved") resolvedOutsideCall(meters, event);
      own?.(event);
    },
  });
  const traced = new WeakMap<object, Tool<unknown, unknown>>();

  function callWithOutcome<A, R>(
    taskId: string,
    tool: Tool<A, R>,
    args: A,
    callOptions?: CallOptions,
  ): Promise<CallOutcome<R>> {
    // The harness's own check names the fault; a cast keeps `tool` typed as the caller's.
    if (!isTool(tool as unknown)) return harness.callWithOutcome(taskId, tool, args, callOptions);
    let run = traced.get(tool) as Tool<A, R> | undefined;
    if (run === undefined) {
      run = withKeyInBaggage<A, R>(tool, meters.keys.hashed);
      traced.set(tool, run as Tool<unknown, unknown>);
    }
    const inner = run;
    const attributes: Attributes = {
      [Attr.operationName]: "execute_tool",
      [Attr.toolName]: tool.name,
      [Attr.taskId]: taskId,
      [Attr.effect]: tool.effect,
    };
    const span = meters.startSpan(`execute_tool ${tool.name}`, { kind: SpanKind.INTERNAL, attributes });
    return meters.withSpan(span, async () => {
      const state: CallState = {
        span,
        key: undefined,
        executed: false,
        replayed: false,
        waited: false,
        takenOver: false,
      };
      const scoped: Context = context.active().setValue(CALL, state);
      try {
        const outcome = await context.with(scoped, () =>
          harness.callWithOutcome(taskId, inner, args, callOptions),
        );
        finish(meters, state, tool.name, ended(state));
        return outcome;
      } catch (error) {
        const outcome =
          error instanceof OutcomeUnknownError
            ? Outcome.outcomeUnknown
            : error instanceof ApprovalDeniedError
              ? Outcome.denied
              : Outcome.failed;
        const keys = [state.key];
        if (error instanceof OutcomeUnknownError || error instanceof ApprovalDeniedError) {
          span.setAttributes(meters.keys.attributes(error.key));
          keys.push(error.key);
        }
        span.recordException(meters.keys.exception(error, keys));
        span.setStatus({ code: SpanStatusCode.ERROR, message: meters.keys.scrub(String(error), keys) });
        finish(meters, state, tool.name, outcome);
        if (isIdempotencyConflictError(error)) meters.conflicts.add(1, { [Attr.toolName]: tool.name });
        throw error;
      } finally {
        span.end();
      }
    });
  }

  async function call<A, R>(
    taskId: string,
    tool: Tool<A, R>,
    args: A,
    callOptions?: CallOptions,
  ): Promise<R> {
    return (await callWithOutcome(taskId, tool, args, callOptions)).value;
  }

  return { ...harness, call, callWithOutcome };
}

/** The same tool, whose `run` sees the key (or with `hashKeys`, its hash) in the active context's baggage. */
function withKeyInBaggage<A, R>(tool: Tool<A, R>, hashed: boolean): Tool<A, R> {
  return defineTool({
    ...tool,
    run(args, ctx) {
      const active = context.active();
      const entry = hashed
        ? ([KEY_HASH_BAGGAGE, sha256Hex(ctx.idempotencyKey)] as const)
        : ([KEY_BAGGAGE, ctx.idempotencyKey] as const);
      const baggage = (propagation.getBaggage(active) ?? propagation.createBaggage()).setEntry(entry[0], {
        value: entry[1],
      });
      return context.with(propagation.setBaggage(active, baggage), () => tool.run(args, ctx));
    },
  });
}

function observe(meters: Instruments, state: CallState, event: HarnessEvent): void {
  const { span } = state;
  const tool = { [Attr.toolName]: event.tool };
  state.key = event.key;
  span.setAttributes(meters.keys.attributes(event.key));
  span.setAttribute(Attr.attempt, event.attempt);
  const attributes: Attributes = { [Attr.attempt]: event.attempt };
  switch (event.type) {
    case "executed":
      state.executed = true;
      if (event.argsDiffer) span.setAttribute(Attr.argsDiffer, true);
      attributes["idemkey.recorded"] = event.recorded;
      break;
    case "replayed":
      state.replayed = true;
      if (event.argsDiffer) span.setAttribute(Attr.argsDiffer, true);
      meters.replays.add(1, tool);
      break;
    case "waited":
      state.waited = true;
      span.setAttribute(Attr.waitedOn, event.on);
      attributes[Attr.waitedOn] = event.on;
      meters.waits.add(1, { ...tool, [Attr.waitedOn]: event.on });
      break;
    case "taken_over":
      state.takenOver = true;
      attributes["idemkey.previous_attempts"] = event.previousAttempts;
      meters.takeovers.add(1, tool);
      break;
    case "retried":
      attributes["idemkey.delay_ms"] = event.delayMs;
      attributes["exception.message"] = meters.keys.scrub(String(event.error), [event.key]);
      break;
    case "outcome_unknown":
    case "failed":
      attributes["exception.message"] = meters.keys.scrub(String(event.error), [event.key]);
      break;
    case "resolved":
      attributes[Attr.resolvedHow] = event.how;
      meters.resolutions.add(1, { ...tool, [Attr.resolvedHow]: event.how });
      break;
  }
  span.addEvent(`idemkey.${event.type}`, attributes);
}

/** A call that returned: it ran the tool (perhaps after taking over), got another's result, or a recorded one. */
function ended(state: CallState): Outcome {
  if (state.executed) return state.takenOver ? Outcome.takenOver : Outcome.executed;
  if (state.waited) return Outcome.waited;
  return Outcome.replayed;
}

function finish(meters: Instruments, state: CallState, tool: string, outcome: Outcome): void {
  state.span.setAttribute(Attr.outcome, outcome);
  meters.calls.add(1, { [Attr.toolName]: tool, [Attr.outcome]: outcome });
  if (outcome === Outcome.outcomeUnknown) meters.unknown.add(1, { [Attr.toolName]: tool });
}
