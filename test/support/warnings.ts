import { afterEach } from "vitest";

/**
 * The IdemkeyWarnings emitted from now on, heard as an application would (`process.on("warning")`). Node's own
 * listener, which prints every warning to stderr, is set aside meanwhile, as `--no-warnings` does, so that the
 * warnings a test expects leave a passing run quiet; `stop` (also run after each test) puts it back and returns
 * what was heard. Warnings of other types pass through to the listeners set aside.
 */
export function idemkeyWarnings(): { seen: string[]; stop: () => Promise<string[]> } {
  const seen: string[] = [];
  const others = process.listeners("warning");
  process.removeAllListeners("warning");
  const listener = (warning: Error) => {
    if (warning.name === "IdemkeyWarning") seen.push(warning.message);
    else for (const other of others) other(warning);
  };
  process.on("warning", listener);
  let stopped = false;
  const stop = async () => {
    // Warnings are emitted on the next tick: wait for them before reading.
    await new Promise((resolve) => setImmediate(resolve));
    if (stopped) return seen;
    stopped = true;
    process.off("warning", listener);
    for (const other of others) process.on("warning", other);
    return seen;
  };
  pending.add(stop);
  return { seen, stop };
}

const pending = new Set<() => Promise<string[]>>();
afterEach(async () => {
  for (const stop of pending) await stop();
  pending.clear();
});
