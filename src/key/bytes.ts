/**
 * The few byte operations the core does with Node's `Buffer`, which is a global in Node, Bun and Deno but not in
 * workerd without `nodejs_compat` or in a browser. Where `Buffer` exists it is used, since the key's writer was
 * measured on it (`npm run bench -- key`); elsewhere a plain `Uint8Array` with TextEncoder and TextDecoder gives the
 * same bytes and the same strings.
 */
type NodeBuffer = Uint8Array & {
  toString(encoding: "utf8" | "latin1" | "base64", start?: number, end?: number): string;
  write(text: string, offset: number, encoding: "utf8"): number;
};
interface NodeBufferClass {
  allocUnsafe(size: number): NodeBuffer;
  byteLength(text: string): number;
  from(bytes: ArrayBufferLike, offset: number, length: number): NodeBuffer;
}

const NativeBuffer = (globalThis as { Buffer?: NodeBufferClass }).Buffer;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A byte array of `size` bytes whose contents are not defined. */
export const allocBytes: (size: number) => Uint8Array = NativeBuffer
  ? (size) => NativeBuffer.allocUnsafe(size)
  : (size) => new Uint8Array(size);

/**
 * `bytes[start, end)` as a string: UTF-8, or Latin-1 when `ascii` (the caller knows every byte is below 0x80, where
 * the two agree and Latin-1 is a plain copy). `bytes` must come from `allocBytes`.
 */
export const decodeBytes: (bytes: Uint8Array, ascii: boolean, start: number, end: number) => string =
  NativeBuffer
    ? (bytes, ascii, start, end) => (bytes as NodeBuffer).toString(ascii ? "latin1" : "utf8", start, end)
    : (bytes, _ascii, start, end) => decoder.decode(bytes.subarray(start, end));

/**
 * Writes well-formed `text` as UTF-8 at `offset` of `bytes` (from `allocBytes`, with room for 3 bytes per UTF-16
 * unit) and returns the count of bytes written.
 */
export const encodeInto: (text: string, bytes: Uint8Array, offset: number) => number = NativeBuffer
  ? (text, bytes, offset) => (bytes as NodeBuffer).write(text, offset, "utf8")
  : (text, bytes, offset) => encoder.encodeInto(text, bytes.subarray(offset)).written;

/** The length of `text` in UTF-8 bytes. */
export const utf8Length: (text: string) => number = NativeBuffer
  ? (text) => NativeBuffer.byteLength(text)
  : (text) => encoder.encode(text).byteLength;

/** `bytes` in base64 (RFC 4648, with padding). */
export const toBase64: (bytes: Uint8Array) => string = NativeBuffer
  ? (bytes) => NativeBuffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64")
  : (bytes) => {
      let binary = "";
      for (let i = 0; i < bytes.length; i += 0x8000) {
        binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
      }
      return btoa(binary);
    };

/** The bytes of base64 `text`. */
export function fromBase64(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** Orders two strings by their UTF-8 bytes (which is by code point), as the stores' indexes do. */
export function compareUtf8(a: string, b: string): number {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  const length = Math.min(x.length, y.length);
  for (let i = 0; i < length; i++) {
    if (x[i] !== y[i]) return x[i]! - y[i]!;
  }
  return x.length - y.length;
}
