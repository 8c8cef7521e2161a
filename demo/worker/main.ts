/**
 * A worker process of the chaos run (started by the supervisor with `fork`): runs the jobs it is sent, one at a
 * time, and reports over the IPC channel. Its one argument is its `WorkerConfig` as JSON. It exits when told to,
 * and when the supervisor goes away (the channel disconnects), so that no worker outlives the demo.
 */
import type { Store } from "../../src/index.js";
import type { FromWorker, ToWorker, WorkerConfig } from "../protocol.js";
import { makeAgent } from "./agent.js";
import { openLedger } from "./ledger.js";

const config = JSON.parse(process.argv[2] ?? "") as WorkerConfig;

/** Resolves once the message is handed to the channel, so that a report made just before SIGKILL is not lost. */
function report(message: FromWorker): Promise<void> {
  return new Promise((resolve) => {
    if (!process.connected) resolve();
    else process.send!(message, undefined, {}, () => resolve());
  });
}

process.on("disconnect", () => process.exit(0));

const ledger: Store | undefined = config.ledger === undefined ? undefined : await openLedger(config.ledger);
const agent = makeAgent(config, ledger, report);

process.on("message", (message: ToWorker) => {
  if (message.t === "exit") {
    void (ledger?.close() ?? Promise.resolve()).finally(() => process.exit(0));
    return;
  }
  const { task, copy } = message.job;
  agent.run(message.job).then(
    () => report({ t: "done", task: task.id, copy }),
    (error: unknown) =>
      report({
        t: "failed",
        task: task.id,
        copy,
        error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      }),
  );
});

await report({ t: "ready" });
