import { InvalidIdempotencyKeyError } from "./invalid-key-error.js";
import { IDEMPOTENCY_KEY_META } from "./meta.js";

/** Visible ASCII without `"`, `,` and `\`: what an `Idempotency-Key` header carries bare. */
const KEY = /^[\x21\x23-\x2b\x2d-\x5b\x5d-\x7e]{1,255}$/;
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
  if (!KEY.test(value)) {
    const why =
      value.length === 0
        ? "is empty"
        : value.length > 255
          ? `is ${value.length} characters long; the limit is 255`
          : 'has a character that is not visible ASCII, or is one of " , \\';
    throw new InvalidIdempotencyKeyError(
      PATH,
      `${PATH} ${why}; send a key such as idempotencyKey() derives, or a UUID`,
    );
  }
  return value;
}
