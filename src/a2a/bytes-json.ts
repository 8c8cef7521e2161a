/*
 * JSON for A2A objects as the SDK holds them: plain data but for the bytes of a `raw` part (a Buffer), which
 * plain JSON would turn into an array of numbers that reads back as something else. Kept here rather than through
 * the SDK's own codecs so that idemkey/a2a loads nothing of the SDK at run time (its types only).
 */

const BYTES = "dev.idemkey/bytes";

/** `value` as JSON text, bytes as `{ "dev.idemkey/bytes": "<base64>" }`. */
export function toJsonText(value: unknown): string {
  return JSON.stringify(value, function (this: Record<string, unknown>, key, replaced) {
    const raw = this[key];
    return raw instanceof Uint8Array ? { [BYTES]: Buffer.from(raw).toString("base64") } : replaced;
  });
}

/** What `toJsonText` wrote, bytes back as Buffers. */
export function fromJsonText<T>(text: string): T {
  return JSON.parse(text, (_key, value) => {
    if (
      typeof value === "object" &&
      value !== null &&
      typeof value[BYTES] === "string" &&
      Object.keys(value).length === 1
    ) {
      return Buffer.from(value[BYTES], "base64");
    }
    return value;
  }) as T;
}
