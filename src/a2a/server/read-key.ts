import type { Message } from "@a2a-js/sdk";
import { bareKeyProblem } from "../../key/key-rule.js";
import { IDEMPOTENCY_KEY_METADATA } from "../meta.js";

const PATH = `message.metadata["${IDEMPOTENCY_KEY_METADATA}"]`;

/**
 * The idempotency key a message carries in its metadata, `undefined` when none; `{ problem }` when the value is not
 * a usable key (not a string of 1 to 255 visible ASCII characters without `"`, `,` or `\`).
 */
export function messageKey(message: Message): string | undefined | { problem: string } {
  const value = message.metadata?.[IDEMPOTENCY_KEY_METADATA];
  if (value === undefined) return undefined;
  if (typeof value !== "string")
    return { problem: `${PATH} must be a string, got ${value === null ? "null" : typeof value}` };
  const problem = bareKeyProblem(value);
  return problem === undefined ? value : { problem: `${PATH} ${problem}` };
}
