import type { Task } from "@a2a-js/sdk";
import { brand, branded } from "../../errors/brand.js";
import { ErrorAnswer } from "../../errors/error-answer.js";

/**
 * An A2A agent answered with a task in `TASK_STATE_FAILED`, `TASK_STATE_CANCELED` or `TASK_STATE_REJECTED` that is
 * not one of `idempotentExecutor`'s refusals (`task.status.state` says which). The SDK's server turns an executor that
 * throws into such a task, so it cannot tell "declined, nothing happened" from "booked, then crashed", and a task
 * canceled while it ran may have acted before it stopped: it says nothing about the effect. The harness applies the
 * one rule (docs/integration-contract.md): the tool's declared `noEffect` classifier, which receives this error
 * (`answer` and `task` are the task), may vouch for it; otherwise an `unguarded` call's outcome is unknown and a
 * `keyed` one is released (the agent dedupes a repeat on the key).
 */
export class A2aTaskError extends ErrorAnswer<Task> {
  override name = "A2aTaskError";
  /** The task, as the agent answered it: the same object as `answer`. */
  readonly task: Task;

  constructor(tool: string, task: Task, text: string) {
    super(task, { tool, text });
    this.task = task;
  }
}
brand(A2aTaskError, "A2aTaskError");

/** Whether `error` is an `A2aTaskError`, from this copy of idemkey or another, in any realm. */
export function isA2aTaskError(error: unknown): error is A2aTaskError {
  return branded(error, "A2aTaskError");
}
