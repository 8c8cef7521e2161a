import type { RunnableConfig } from "@langchain/core/runnables";

/**
 * The default task id: the thread id, which LangGraph keeps for the whole life of a thread across interrupts,
 * resumes, retries and process restarts (the checkpointer is keyed by it), and the names of the subgraphs and node
 * the call is made in, from the checkpoint namespace without its per-task ids (`parent:<id>|child:<id>` becomes
 * `["parent", "child"]`): the same tool with the same arguments in two subgraphs of one thread is two calls. As JSON,
 * `["<thread id>", "<node>", ...]`, so that no thread id can run into a namespace.
 */
export function defaultTaskId(config: RunnableConfig | undefined): string {
  const configurable = config?.configurable ?? {};
  const thread = configurable.thread_id;
  if (typeof thread !== "string" && typeof thread !== "number") {
    throw new TypeError(
      "idemkey/langgraph needs a thread id to key a call: run the graph with a checkpointer and " +
        "{ configurable: { thread_id } }, or pass options.taskId",
    );
  }
  const ns = typeof configurable.checkpoint_ns === "string" ? configurable.checkpoint_ns : "";
  const names = ns === "" ? [] : ns.split("|").map((part) => part.replace(/:[^:]*$/, ""));
  return JSON.stringify([String(thread), ...names]);
}

export function resolveTaskId(
  taskId: unknown,
  option = "options.taskId",
): (config: RunnableConfig | undefined) => string {
  if (taskId === undefined) return defaultTaskId;
  if (typeof taskId !== "function") {
    throw new TypeError(`${option} must be a function of the runnable config, got ${typeof taskId}`);
  }
  return (config) => {
    const id = taskId(config);
    if (typeof id !== "string" || id.length === 0) {
      throw new TypeError(
        `${option} must return a non-empty string, got ${id === "" ? "an empty string" : typeof id}`,
      );
    }
    return id;
  };
}
