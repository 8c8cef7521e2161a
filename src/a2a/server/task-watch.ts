import type { ExecutionEventBus } from "@a2a-js/sdk/server";
import type { Store } from "../../store/types.js";
import { type A2aAnswer, type A2aEvent, answerText, foldEvents } from "../fold.js";
import { TaskState } from "../meta.js";
import { recordingBus } from "./answers.js";

/** The states in which the SDK keeps a task's event bus open after `execute` returned: a cancel can still come. */
const INTERRUPTED: readonly number[] = [
  TaskState.TASK_STATE_INPUT_REQUIRED,
  TaskState.TASK_STATE_AUTH_REQUIRED,
];

/** A recorded execution whose task waits for input or authorization: where its record is, and what it holds. */
interface Waiting {
  recordKey: string;
  answer: A2aAnswer & { kind: "task" };
  /** Told when the record could not be brought up to date. */
  onSaveError: (error: unknown) => void;
}

/** A keyed execution of a task, from its start until its answer is recorded. */
interface Execution {
  /** What it published; a cancel's events join them until `execute` returns. */
  events: A2aEvent[];
  running: boolean;
  /** Settles once the answer is recorded (or not): the record a later cancel brings up to date, if any. */
  recorded: Promise<Waiting | undefined>;
}

/**
 * The keyed executions of one wrapper whose task a `tasks/cancel` may still reach, by task id, so that what the
 * inner executor's `cancelTask` publishes joins the record as the execution's own events do: the record stays the
 * task as its last event left it. The SDK calls `cancelTask` only in the process that holds the task's event bus,
 * the one that ran the execution, so a map in memory sees every cancel there is.
 */
export function taskWatch(store: Store) {
  const executions = new Map<string, Execution>();
  const waiting = new Map<string, Waiting>();

  /**
   * A keyed execution of `taskId` starts, recording into `events`: `ran` once `execute` returned, `recorded` once
   * its answer was saved (with where, for a task left waiting) or not.
   */
  function start(taskId: string, events: A2aEvent[]) {
    // A message that continues a task moves it on: the first message's answer is its own, no cancel changes it.
    waiting.delete(taskId);
    let settle: (value: Waiting | undefined) => void = () => {};
    const execution: Execution = {
      events,
      running: true,
      recorded: new Promise((resolve) => {
        settle = resolve;
      }),
    };
    executions.set(taskId, execution);
    return {
      ran() {
        execution.running = false;
      },
      recorded(
        recordKey: string | undefined,
        answer: A2aAnswer | undefined,
        onSaveError: Waiting["onSaveError"],
      ) {
        if (executions.get(taskId) === execution) executions.delete(taskId);
        const left = answer?.kind === "task" && INTERRUPTED.includes(answer.data.status?.state ?? 0);
        const watched = recordKey !== undefined && left ? { recordKey, answer, onSaveError } : undefined;
        // Held until the task is canceled or continued, as long as the SDK holds the task's event bus for it.
        if (watched !== undefined) waiting.set(taskId, watched);
        settle(watched);
      },
    };
  }

  /** Calls the inner executor's `cancelTask` with a bus whose events reach the record of the task. */
  async function cancel(
    taskId: string,
    bus: ExecutionEventBus,
    inner: (bus: ExecutionEventBus) => Promise<void>,
  ): Promise<void> {
    const execution = executions.get(taskId);
    if (execution?.running) return inner(recordingBus(bus, execution.events).bus);
    // Its execute returned and its answer is being saved: the cancel is applied to the record once it is there.
    if (execution !== undefined) await execution.recorded;
    const watched = waiting.get(taskId);
    if (watched === undefined) return inner(bus);
    waiting.delete(taskId);
    const recording = recordingBus(bus, [{ kind: "task", data: watched.answer.data }]);
    try {
      await inner(recording.bus);
    } finally {
      const answer = foldEvents(recording.events);
      if (answer !== undefined && recording.events.length > 1) {
        try {
          await store.update(watched.recordKey, { state: "completed" }, { result: answerText(answer) });
        } catch (error) {
          watched.onSaveError(error);
        }
      }
    }
  }

  return { start, cancel };
}
