import type { Attributes, Exception } from "@opentelemetry/api";
import { sha256Hex } from "../key/idempotency-key.js";
import { Attr } from "./attributes.js";

/** How one bridge writes keys: as themselves, or (`hashKeys`) as their SHA-256 wherever they would appear. */
export interface KeyWriter {
  readonly hashed: boolean;
  /** `{ "idemkey.key": key }`, or `{ "idemkey.key_sha256": sha256(key) }` when keys are hashed. */
  attributes(key: string): Attributes;
  /** `text` with each of `keys` replaced by `sha256:<hash>` when keys are hashed (an error's message names its key). */
  scrub(text: string, keys: readonly (string | undefined)[]): string;
  /** What `span.recordException` is given: the error itself, or a copy whose message and stack are scrubbed. */
  exception(error: unknown, keys: readonly (string | undefined)[]): Exception;
}

export function keyWriter(hashed: boolean): KeyWriter {
  const scrub = (text: string, keys: readonly (string | undefined)[]) => {
    if (!hashed) return text;
    let out = text;
    for (const key of keys) {
      if (key !== undefined && key !== "") out = out.split(key).join(`sha256:${sha256Hex(key)}`);
    }
    return out;
  };
  return {
    hashed,
    attributes: (key) => (hashed ? { [Attr.keyHash]: sha256Hex(key) } : { [Attr.key]: key }),
    scrub,
    exception(error, keys) {
      if (!(error instanceof Error)) return scrub(String(error), keys);
      if (!hashed) return error;
      const copy: Exception = { name: error.name, message: scrub(error.message, keys) };
      if (error.stack !== undefined) copy.stack = scrub(error.stack, keys);
      return copy;
    },
  };
}
