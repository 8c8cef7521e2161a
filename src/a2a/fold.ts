import type { Artifact, Message, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent } from "@a2a-js/sdk";
import { fromJsonText, toJsonText } from "./bytes-json.js";

/** One event of an execution, as the server's event bus and the client's stream both carry it. */
export type A2aEvent =
  | { kind: "message"; data: Message }
  | { kind: "task"; data: Task }
  | { kind: "statusUpdate"; data: TaskStatusUpdateEvent }
  | { kind: "artifactUpdate"; data: TaskArtifactUpdateEvent };

/** What an execution answered: a message, or the task as its last event left it. */
export type A2aAnswer = { kind: "message"; data: Message } | { kind: "task"; data: Task };

/**
 * The answer a run of events makes, folded as the SDK's `ResultManager` folds them into the task it stores: a
 * message ends it; a task event sets the task; a status update sets its status (its message joins the history);
 * an artifact update adds, replaces or appends to an artifact by id. `undefined` when no message or task came.
 */
export function foldEvents(events: readonly A2aEvent[]): A2aAnswer | undefined {
  let task: Task | undefined;
  for (const event of events) {
    switch (event.kind) {
      case "message":
        return { kind: "message", data: structuredClone(event.data) };
      case "task": {
        const next = structuredClone(event.data);
        if (task !== undefined && task.id === next.id)
          next.artifacts = mergeArtifacts(task.artifacts, next.artifacts);
        task = next;
        break;
      }
      case "statusUpdate":
        if (task !== undefined && task.id === event.data.taskId) applyStatus(task, event.data);
        break;
      case "artifactUpdate":
        if (task !== undefined && task.id === event.data.taskId) applyArtifact(task, event.data);
        break;
    }
  }
  return task === undefined ? undefined : { kind: "task", data: task };
}

function applyStatus(task: Task, update: TaskStatusUpdateEvent): void {
  task.status = structuredClone(update.status);
  if (update.metadata) task.metadata = { ...task.metadata, ...structuredClone(update.metadata) };
  const message = update.status?.message;
  if (message && !task.history.some((m) => m.messageId === message.messageId)) {
    task.history = [...task.history, structuredClone(message)];
  }
}

function applyArtifact(task: Task, update: TaskArtifactUpdateEvent): void {
  const artifact = update.artifact;
  if (!artifact) return;
  const at = task.artifacts.findIndex((a) => a.artifactId === artifact.artifactId);
  const existing = task.artifacts[at];
  if (existing === undefined) task.artifacts = [...task.artifacts, structuredClone(artifact)];
  else if (update.append) existing.parts = [...existing.parts, ...structuredClone(artifact.parts)];
  else task.artifacts[at] = structuredClone(artifact);
  if (update.metadata) task.metadata = { ...task.metadata, ...structuredClone(update.metadata) };
}

function mergeArtifacts(before: Artifact[], after: Artifact[]): Artifact[] {
  const merged = before.map((a) => structuredClone(after.find((b) => b.artifactId === a.artifactId) ?? a));
  for (const a of after)
    if (!before.some((b) => b.artifactId === a.artifactId)) merged.push(structuredClone(a));
  return merged;
}

/** The answer as the text a store keeps, bytes (`raw` parts) included. */
export function answerText(answer: A2aAnswer): string {
  return toJsonText(answer);
}

/** The answer `answerText` kept. */
export function parseAnswer(text: string): A2aAnswer {
  return fromJsonText<A2aAnswer>(text);
}
