import type { Message, Part } from "@a2a-js/sdk";
import { sha256Hex } from "../../key/idempotency-key.js";
import { IDEMPOTENCY_KEY_METADATA, Role } from "../meta.js";

/** What a message says, before `keyedMessage` gives it its id and key. */
export interface A2aMessageInput {
  /** A text part, sent before `parts`. */
  text?: string;
  parts?: Part[];
  /** The conversation the message belongs to. @default the server's choice */
  contextId?: string;
  /** The task the message continues (an `INPUT_REQUIRED` one). @default a new task */
  taskId?: string;
  referenceTaskIds?: string[];
  extensions?: string[];
  metadata?: { [name: string]: unknown };
}

/**
 * The message id of a keyed message: a UUID (version 8) derived from the key, so that a retry of the same call
 * sends the same message, and servers that expect UUIDs accept it.
 */
export function messageIdFor(key: string): string {
  const hex = sha256Hex(`dev.idemkey/message-id\n${key}`);
  const variant = ((Number.parseInt(hex[16] as string, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/**
 * A user message carrying `key`: its `messageId` derived from the key and the key itself in
 * `metadata["dev.idemkey/idempotency-key"]`, where `idempotentExecutor` reads it. Sending it again, after a lost
 * answer or a crash, sends the same message.
 *
 * @example
 * const message = keyedMessage(ctx.idempotencyKey, { text: "Book a table for two at 8pm" });
 * const answer = await client.sendMessage({ message });
 */
export function keyedMessage(key: string, input: A2aMessageInput): Message {
  if (typeof key !== "string" || key.length === 0) throw new TypeError("key must be a non-empty string");
  if (typeof input !== "object" || input === null) throw new TypeError("input must be an object");
  const parts: Part[] = [];
  if (input.text !== undefined) {
    parts.push({
      content: { $case: "text", value: input.text },
      mediaType: "text/plain",
      filename: "",
      metadata: undefined,
    });
  }
  parts.push(...(input.parts ?? []));
  if (parts.length === 0) throw new TypeError("input must have a text or parts");
  return {
    messageId: messageIdFor(key),
    contextId: input.contextId ?? "",
    taskId: input.taskId ?? "",
    role: Role.ROLE_USER,
    parts,
    metadata: { ...input.metadata, [IDEMPOTENCY_KEY_METADATA]: key },
    extensions: input.extensions ?? [],
    referenceTaskIds: input.referenceTaskIds ?? [],
  };
}
