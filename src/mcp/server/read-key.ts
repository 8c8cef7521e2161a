import { bareKeyProblem } from "../../key/key-rule.js";
import { IDEMPOTENCY_KEY_META } from "../meta.js";
import { InvalidIdempotencyKeyError } from "./invalid-key-error.js";

const PATH = `params._meta["${IDEMPOTENCY_KEY_META}"]`;

/**
 * The idempotency key a client sent with a tool call, read from a tool handler's `extra` (the request `_meta`: v1's
 * `extra._meta` or v2's `ctx.mcpReq._meta`), so
 * that the server forwards it to the system it writes to (an `Idempotency-Key` header, a unique column). `undefined`
 * when the call carried none. Throws `InvalidIdempotencyKeyError` when the value is not a usable key.
 *
 * @example
 * server.registerTool("create_issue", config, async (args, extra) => {
 *   const key = idempotencyKeyOf(extra);
 *   const issue = await tracker.create(args, { headers: key ? { "Idempotency-Key": key } : {} });
 *   return { content: [{ type: "text", text: issue.url }] };
 * });
 */
export function idempotencyKeyOf(extra: {
  _meta?: { [name: string]: unknown } | undefined;
  mcpReq?: { _meta?: { [name: string]: unknown } | undefined };
}): string | undefined {
  // v1 hands the handler the request _meta as extra._meta; v2 as ctx.mcpReq._meta.
  const meta = extra?._meta ?? extra?.mcpReq?._meta;
  const value = meta?.[IDEMPOTENCY_KEY_META];
  if (value === undefined) return undefined;
  if (typeof value !== "string") {
    throw new InvalidIdempotencyKeyError(
      PATH,
      `${PATH} must be a string, got ${value === null ? "null" : typeof value}`,
    );
  }
  // The bare form: a server forwards what it reads here into a header or a column as it is, unquoted.
  const problem = bareKeyProblem(value);
  if (problem !== undefined) {
    throw new InvalidIdempotencyKeyError(
      PATH,
      `${PATH} ${problem}; send a key such as idempotencyKey() derives, or a UUID`,
    );
  }
  return value;
}
