import { appendFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Task, TaskState } from "@a2a-js/sdk";
import { afterEach, describe, expect, it } from "vitest";
import { a2aTool, isA2aTaskError, keyedMessage } from "../../src/a2a/index.js";
import { OutcomeUnknownError } from "../../src/errors/outcome-unknown-error.js";
import { createHarness } from "../../src/harness/create-harness.js";
import { memoryStore } from "../../src/store/memory.js";
import { type BookingHooks, startBookingAgent } from "./fixtures/booking-agent.js";
import { bookings, bookingText, clientFor } from "./support.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function effectsFile(): string {
  const dir = mkdtempSync(join(tmpdir(), "idemkey-a2a-cancel-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, "bookings.log");
  appendFileSync(file, "");
  return file;
}

/** A fresh harness per call: each retry reaches the agent, as from a restarted caller with the same task id. */
const harness = () => createHarness({ retry: { retries: 0 } });

async function agent(effects: string, hooks: BookingHooks) {
  const started = await startBookingAgent({ effects, executor: { store: memoryStore(), pollMs: 5 }, hooks });
  cleanups.push(started.close);
  return { ...started, client: await clientFor(started.url) };
}

/** A promise and the function that settles it: an event the test waits for, never a sleep. */
function signal<T = void>(): { promise: Promise<T>; fire: (value: T) => void } {
  let fire: (value: T) => void = () => {};
  const promise = new Promise<T>((resolve) => {
    fire = resolve;
  });
  return { promise, fire };
}

/** What a call to the agent ended in: the task it answered, or the error it threw. */
async function settled(call: Promise<unknown>): Promise<{ task?: Task; error?: unknown }> {
  try {
    return { task: (await call) as Task };
  } catch (error) {
    return { error };
  }
}

describe("idemkey/a2a: a task canceled (tasks/cancel) while it runs, after its booking", () => {
  for (const cancelFrom of ["cancelTask", "execute"] as const) {
    it(`canceled by ${cancelFrom === "cancelTask" ? "the executor's cancelTask" : "its execute"}: the record is the canceled task, and the first call and two retries all throw A2aTaskError with the canceled task; one booking`, async () => {
      const effects = effectsFile();
      const booked = signal<string>();
      const canceling = signal<string>();
      const gate = signal();
      const server = await agent(effects, {
        cancelFrom,
        onEffect: (_id, taskId) => booked.fire(taskId),
        onCancel: (taskId) => canceling.fire(taskId),
        afterEffect: () => gate.promise,
      });
      const book = a2aTool(server.client, { name: "book", effect: "keyed" });
      const args = { text: "table for two at 8" };

      const first = settled(harness().call("trip-c1", book, args));
      const taskId = await booked.promise;
      const cancel = server.client.cancelTask({ id: taskId } as never);
      expect(await canceling.promise).toBe(taskId);
      gate.fire();
      expect((await cancel).status?.state).toBe(TaskState.TASK_STATE_CANCELED);

      const answers = [await first];
      for (let retry = 0; retry < 2; retry++)
        answers.push(await settled(harness().call("trip-c1", book, args)));
      for (const { task, error } of answers) {
        expect(task?.status?.state).toBeUndefined(); // never answered as a success
        expect(isA2aTaskError(error)).toBe(true);
        const answered = (error as { task: Task }).task;
        expect(answered.id).toBe(taskId);
        expect(answered.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
      }
      // On the wire: the same message again is answered from the record, the task as canceled.
      const key = harness().key("trip-c1", book, args);
      const replayed = (await server.client.sendMessage({
        message: keyedMessage(key, args),
      } as never)) as Task;
      expect(replayed.id).toBe(taskId);
      expect(replayed.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
      // The server's own view agrees, and the booking was made once.
      const held = await server.client.getTask({ id: taskId } as never);
      expect(held.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
      expect(bookings(effects)).toHaveLength(1);
    });
  }

  it("an unguarded call whose task is canceled ends in OutcomeUnknownError: the booking may stand, nothing repeats it", async () => {
    const effects = effectsFile();
    const booked = signal<string>();
    const canceling = signal<string>();
    const gate = signal();
    const server = await agent(effects, {
      onEffect: (_id, taskId) => booked.fire(taskId),
      onCancel: (taskId) => canceling.fire(taskId),
      afterEffect: () => gate.promise,
    });
    const book = a2aTool(server.client, { name: "book", effect: "unguarded" });
    const calls = harness();
    const first = settled(calls.call("trip-c2", book, { text: "table for four" }));
    const taskId = await booked.promise;
    const cancel = server.client.cancelTask({ id: taskId } as never);
    await canceling.promise;
    gate.fire();
    await cancel;
    const { error } = await first;
    expect(error).toBeInstanceOf(OutcomeUnknownError);
    await expect(calls.call("trip-c2", book, { text: "table for four" })).rejects.toBeInstanceOf(
      OutcomeUnknownError,
    );
    expect(bookings(effects)).toHaveLength(1);
  });
});

describe("idemkey/a2a: the states a task is left in are recorded as its last event left them", () => {
  const states = [
    ["input-required", TaskState.TASK_STATE_INPUT_REQUIRED],
    ["auth-required", TaskState.TASK_STATE_AUTH_REQUIRED],
    ["unspecified (unknown)", TaskState.TASK_STATE_UNSPECIFIED],
  ] as const;
  for (const [name, state] of states) {
    it(`${name}: the first call and a retry return the task in that state, the same task; one booking`, async () => {
      const effects = effectsFile();
      const server = await agent(effects, { finalState: state });
      const book = a2aTool(server.client, { name: "book", effect: "keyed" });
      const args = { text: `booking left ${name}` };
      const first = (await harness().call("trip-s", book, args)) as Task;
      const again = (await harness().call("trip-s", book, args)) as Task;
      const made = bookings(effects);
      expect(made).toHaveLength(1);
      expect(again.id).toBe(first.id);
      expect(again.status?.state).toBe(state);
      expect(bookingText(again)).toBe(`booked ${made[0]?.id}`);
      expect(first.status?.state).toBe(state);
      // A retry by message/stream gets the recorded task too, and its stream ends.
      const streamed = a2aTool(server.client, { name: "book", effect: "keyed", stream: true });
      const viaStream = (await harness().call("trip-s", streamed, args)) as Task;
      expect(viaStream.id).toBe(first.id);
      expect(viaStream.status?.state).toBe(state);
      expect(bookings(effects)).toHaveLength(1);
    });
  }

  it("input-required, then canceled after the execution returned: the record becomes the canceled task, the retry throws A2aTaskError with it, and the server still holds it canceled", async () => {
    const effects = effectsFile();
    const server = await agent(effects, { finalState: TaskState.TASK_STATE_INPUT_REQUIRED });
    const book = a2aTool(server.client, { name: "book", effect: "keyed" });
    const args = { text: "table for six, which room?" };
    const first = (await harness().call("trip-s2", book, args)) as Task;
    expect(first.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const canceled = await server.client.cancelTask({ id: first.id } as never);
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    for (let retry = 0; retry < 2; retry++) {
      const { error } = await settled(harness().call("trip-s2", book, args));
      expect(isA2aTaskError(error)).toBe(true);
      expect((error as { task: Task }).task.id).toBe(first.id);
      expect((error as { task: Task }).task.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    }
    // The replay is published on the retry's bus as the task it recorded: the server's copy is not set back.
    expect((await server.client.getTask({ id: first.id } as never)).status?.state).toBe(
      TaskState.TASK_STATE_CANCELED,
    );
    expect(bookings(effects)).toHaveLength(1);
  });

  it("a limit: a retry of the first message after a follow-up completed its task replays the task waiting for input, and the SDK stores that replay over the completed task", async () => {
    const effects = effectsFile();
    const server = await agent(effects, {
      finalState: (text) =>
        text.endsWith("?") ? TaskState.TASK_STATE_INPUT_REQUIRED : TaskState.TASK_STATE_COMPLETED,
    });
    const book = a2aTool(server.client, { name: "book", effect: "keyed" });
    const args = { text: "table for six, which room?" };
    const first = (await harness().call("trip-s3", book, args)) as Task;
    const followUp = { text: "the blue room", taskId: first.id, contextId: first.contextId };
    const next = (await harness().call("trip-s3", book, followUp)) as Task;
    expect(next.id).toBe(first.id);
    expect(next.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const again = (await harness().call("trip-s3", book, args)) as Task;
    expect(again.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect((await server.client.getTask({ id: first.id } as never)).status?.state).toBe(
      TaskState.TASK_STATE_INPUT_REQUIRED,
    );
    expect(bookings(effects)).toHaveLength(2); // one per message, none rerun
  });
});
