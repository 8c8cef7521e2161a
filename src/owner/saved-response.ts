import { fromBase64, toBase64 } from "../key/bytes.js";
import type { OwnerResponse } from "./problem.js";

/**
 * The JSON text kept in a completed record's `result`. A body that is valid UTF-8 is kept as text (readable in the
 * store), any other as base64. A response that could not be saved (too large) keeps only its status and why.
 */
type Saved =
  | { v: 1; status: number; headers: [string, string][]; body: string; encoding: "utf8" | "base64" }
  | { v: 1; status: number; notSaved: string };

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const encoder = new TextEncoder();

export function encodeSaved(response: OwnerResponse): string {
  const headers = response.headers.map(([name, value]): [string, string] => [name, value]);
  let body: string;
  let encoding: "utf8" | "base64" = "utf8";
  try {
    body = strictUtf8.decode(response.body);
  } catch {
    body = toBase64(response.body);
    encoding = "base64";
  }
  const saved: Saved = { v: 1, status: response.status, headers, body, encoding };
  return JSON.stringify(saved);
}

export function encodeNotSaved(status: number, reason: string): string {
  const saved: Saved = { v: 1, status, notSaved: reason };
  return JSON.stringify(saved);
}

export type DecodedSaved =
  | { readonly saved: true; readonly response: OwnerResponse }
  | { readonly saved: false; readonly status: number; readonly reason: string };

/** Throws on a `result` this version did not write, which the engine reports as a store failure. */
export function decodeSaved(text: string | null): DecodedSaved {
  const saved = JSON.parse(text ?? "null") as Saved | null;
  if (saved === null || saved.v !== 1 || typeof saved.status !== "number") {
    throw new Error("the saved response is not in a format this version of idemkey wrote");
  }
  if ("notSaved" in saved) return { saved: false, status: saved.status, reason: saved.notSaved };
  const body = saved.encoding === "base64" ? fromBase64(saved.body) : encoder.encode(saved.body);
  return { saved: true, response: { status: saved.status, headers: saved.headers, body } };
}
