/**
 * How a failure reaches the user when nobody can be told by a throw: the answer was already decided (the client has
 * its response, the tool its result) and the store then failed, or a hook threw. One way for every module: the
 * module's hook (`onError` of the middleware and of `mcpDedupe`; `onEvent` of the harness, whose own failures
 * are thrown to the caller), and when none is given, or the hook itself throws, a process warning of type
 * `IdemkeyWarning` (`process.on("warning", ...)` receives it; `--no-warnings` silences it). Never `console`, never
 * the caller: a failing hook must not turn a finished call into an unhandled rejection.
 */
export const WARNING_TYPE = "IdemkeyWarning";

/** Calls `hook` with each event; with no hook, or when it throws, emits the `IdemkeyWarning` `text(event)`. */
export function reporter<E>(
  hook: ((event: E) => void) | undefined,
  hookName: string,
  text: (event: E) => string,
): (event: E) => void {
  return (event) => {
    if (hook === undefined) return warn(text(event));
    try {
      hook(event);
    } catch (error) {
      warn(`${hookName} threw on ${text(event)}: ${String(error)}`);
    }
  };
}

function warn(message: string): void {
  process.emitWarning(`idemkey: ${message}`, WARNING_TYPE);
}
