import { readFileSync } from "node:fs";
import type { Task } from "@a2a-js/sdk";
import { ClientFactory } from "@a2a-js/sdk/client";
import type { Store } from "../../src/store/types.js";
import { agentCard } from "./fixtures/booking-agent.js";

/** The SDK's own client for the agent whose JSON-RPC endpoint is `url` (the agent, or a proxy in front of it). */
export const clientFor = (url: string) => new ClientFactory().createFromAgentCard(agentCard(url));

/** The bookings the agent wrote, read from its effects file: `{ id, text }` per booking. */
export function bookings(file: string): { id: string; text: string }[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => ({ id: line.slice(0, line.indexOf(" ")), text: line.slice(line.indexOf(" ") + 1) }));
}

/** The text of a task's booking artifact. */
export function bookingText(task: Task): string | undefined {
  const part = task.artifacts.find((a) => a.artifactId === "booking")?.parts[0];
  return part?.content?.$case === "text" ? part.content.value : undefined;
}

/** A store that tells when a claim found its key held by a live execution: a duplicate is waiting to join it. */
export function joinWatch(store: Store): { store: Store; joined: Promise<void> } {
  let told: () => void = () => {};
  const joined = new Promise<void>((resolve) => {
    told = resolve;
  });
  const watched: Store = Object.create(store);
  watched.claim = async (key, input) => {
    const result = await store.claim(key, input);
    if (result.status === "exists" && result.record.state === "pending") told();
    return result;
  };
  return { store: watched, joined };
}
