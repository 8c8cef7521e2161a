/** Longer names are left to JSON.stringify, whose native scan wins once its setup is spread over enough characters. */
const HAND_QUOTED_LIMIT = 256;

/**
 * `"text"` when nothing in `text` needs an escape and it has no surrogate; otherwise `undefined`. The quoted forms of
 * member names the shape cache keeps, and of taskId and tool beside recorded arguments (values are written as bytes,
 * by writer.ts).
 */
export function quotePlain(text: string): string | undefined {
  const length = text.length;
  if (length > HAND_QUOTED_LIMIT) return undefined;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    // Control characters, '"' and '\' need escapes; any surrogate needs the well-formedness check.
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return undefined;
  }
  return '"' + text + '"';
}
