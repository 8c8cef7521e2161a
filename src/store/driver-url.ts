import { resolve as resolvePath } from "node:path";
import type { StoreUrlContext } from "./driver.js";

/*
 * The two URL forms the drivers read, so that each driver's `parse` says only which parameters are its own and the
 * messages for a bad URL read alike whatever the store.
 */

/**
 * A file URL: `<scheme>:<path>` (relative to the working directory, or absolute; `<scheme>:///abs` and
 * `<scheme>://./rel` are common spellings of `<scheme>:/abs` and `<scheme>:./rel`), then `?name=value` parameters,
 * each one of `names`. Returns the absolute path and the parameters.
 */
export function readFileUrl(
  url: string,
  context: StoreUrlContext,
  names: readonly string[],
): { path: string; params: Record<string, string> } {
  const colon = url.indexOf(":");
  const scheme = url.slice(0, colon).toLowerCase();
  const text = url.slice(colon + 1);
  const at = text.indexOf("?");
  const [rest, query] = at === -1 ? [text, undefined] : [text.slice(0, at), text.slice(at + 1)];
  const path = rest.startsWith("//") ? rest.slice(2) : rest;
  if (path === "") context.fail(` names no file; use ${scheme}:./ledger.db`);
  const params: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(query ?? "")) {
    if (!names.includes(name)) context.fail(`: unknown parameter ?${name}= (only ${only(names)})`);
    if (value === "") context.fail(`: ?${name}= is empty`);
    params[name] = value;
  }
  return { path: resolvePath(decodeURIComponent(path)), params };
}

export interface ServerUrlOptions {
  /** The query parameters the driver reads itself: taken out of the URL and returned. */
  params: readonly string[];
  /** What becomes of the others: left in `url` for the client (`keep`: `?sslmode=` for pg) or refused (`reject`). */
  others: "keep" | "reject";
  /** Checks the parsed URL before its parameters are read; calls `context.fail` for what it refuses. */
  check?: (parsed: URL) => void;
}

/** A server URL (`postgres://user:password@host/db?...`): the URL for the client and the driver's own parameters. */
export function readServerUrl(
  url: string,
  context: StoreUrlContext,
  { params: names, others, check }: ServerUrlOptions,
): { url: string; params: Record<string, string> } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    context.fail(" is not a valid URL");
  }
  check?.(parsed);
  const params: Record<string, string> = {};
  for (const name of names) {
    const value = parsed.searchParams.get(name);
    if (value === null) continue;
    if (value === "") context.fail(`: ?${name}= is empty`);
    params[name] = value;
    parsed.searchParams.delete(name);
  }
  if (others === "reject") {
    for (const name of parsed.searchParams.keys()) {
      context.fail(`: unknown parameter ?${name}= (only ${only(names)})`);
    }
  }
  return { url: parsed.href, params };
}

const only = (names: readonly string[]) =>
  names.length === 0 ? "none" : names.map((name) => `?${name}=`).join(", ");
