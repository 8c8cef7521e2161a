import { createHmac, randomBytes } from "node:crypto";

/**
 * A short public name for something the inspector does not show (a masked scope, a claim's token, a store key
 * hashed from a scope): the first `length` hex digits of HMAC-SHA-256 under the inspector's secret. It tells
 * values apart on the page; without the secret, nobody can confirm a guess by hashing it, as they could with a
 * bare SHA-256.
 */
export type KeyedId = (text: string, length: number) => string;

export function keyedId(secret: string): KeyedId {
  // Every row of every answer asks again for the same few scopes and keys: each is hashed once.
  const seen = new Map<string, string>();
  return (text, length) => {
    let hex = seen.get(text);
    if (hex === undefined) {
      if (seen.size >= 20_000) seen.clear();
      hex = createHmac("sha256", secret).update(text).digest("hex");
      seen.set(text, hex);
    }
    return hex.slice(0, length);
  };
}

/** The secret used when none is given: new for each inspector, so its ids hold only while it runs. */
export const randomSecret = () => randomBytes(32).toString("base64url");
