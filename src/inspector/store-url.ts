import { existsSync } from "node:fs";
import { resolve as resolvePath } from "node:path";
import type { Store } from "../store/types.js";
import { StoreUrlError } from "./store-url-error.js";

/** What a `--store` URL names, parsed without connecting. */
export type StoreUrl =
  | { kind: "sqlite"; path: string; table?: string }
  | { kind: "postgres"; connectionString: string; table?: string; schema?: string }
  | { kind: "redis"; url: string; prefix?: string };

/** A store opened from a URL, and how to close it with the client it opened. */
export interface OpenedStore {
  store: Store;
  /** The URL with any password masked, for the page and the logs. */
  label: string;
  close(): Promise<void>;
}

/** Masks the password of a URL's userinfo, so that it never reaches the page or a log line. */
export function maskUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:@/?#]*):[^@/?#]*@/i, "$1:***@");
}

/**
 * Parses a `--store` URL: `sqlite:<path>` (relative to the working directory, or absolute; `?table=`),
 * `postgres://` or `postgresql://` (`?table=`, `?schema=`; other parameters go to `pg`), `redis://` or `rediss://`
 * (`?prefix=`). Throws `StoreUrlError` for anything else.
 */
export function parseStoreUrl(url: string): StoreUrl {
  const shown = maskUrl(url);
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  if (scheme === "sqlite") {
    const [rest = "", query] = splitQuery(url.slice("sqlite:".length));
    // sqlite:///abs and sqlite://./rel are common spellings of sqlite:/abs and sqlite:./rel.
    const path = rest.startsWith("//") ? rest.slice(2) : rest;
    if (path === "") throw new StoreUrlError(shown, `--store ${shown} names no file; use sqlite:./ledger.db`);
    const params = known(shown, query, ["table"]);
    return { kind: "sqlite", path: resolvePath(decodeURIComponent(path)), ...params };
  }
  if (scheme === "postgres" || scheme === "postgresql" || scheme === "redis" || scheme === "rediss") {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new StoreUrlError(shown, `--store ${shown} is not a valid URL`);
    }
    if (parsed.hostname === "" && scheme.startsWith("redis")) {
      throw new StoreUrlError(shown, `--store ${shown} names no host; use ${scheme}://127.0.0.1:6379`);
    }
    const ours = scheme.startsWith("redis") ? ["prefix"] : ["table", "schema"];
    const params: Record<string, string> = {};
    for (const name of ours) {
      const value = parsed.searchParams.get(name);
      if (value === null) continue;
      if (value === "") throw new StoreUrlError(shown, `--store ${shown}: ?${name}= is empty`);
      params[name] = value;
      parsed.searchParams.delete(name);
    }
    if (scheme.startsWith("redis")) {
      for (const name of parsed.searchParams.keys()) {
        throw new StoreUrlError(shown, `--store ${shown}: unknown parameter ?${name}= (only ?prefix=)`);
      }
      return { kind: "redis", url: parsed.href, ...params };
    }
    return { kind: "postgres", connectionString: parsed.href, ...params };
  }
  throw new StoreUrlError(
    shown,
    `--store ${shown} is not a store URL; use sqlite:<path>, postgres://... or redis://...`,
  );
}

/**
 * Opens the store a `--store` URL names. The client packages are imported only for the kind asked for, so that a
 * SQLite inspector needs neither `pg` nor `ioredis`; a missing one is a `StoreUrlError` saying what to install.
 */
export async function openStore(url: string): Promise<OpenedStore> {
  const spec = parseStoreUrl(url);
  const label = maskUrl(url);
  if (spec.kind === "sqlite") {
    // Opening a mistyped path would create an empty ledger and show nothing, silently.
    if (!existsSync(spec.path)) {
      throw new StoreUrlError(label, `--store ${label}: no SQLite file at ${spec.path}`);
    }
    const { sqliteStore } = await importPeer(label, "better-sqlite3", () => import("../sqlite/store.js"));
    const store = sqliteStore(spec.path, spec.table === undefined ? {} : { table: spec.table });
    return { store, label, close: () => store.close() };
  }
  if (spec.kind === "postgres") {
    const { default: pg } = await importPeer(label, "pg", () => import("pg"));
    const { postgresStore } = await import("../postgres/store.js");
    const pool = new pg.Pool({
      connectionString: spec.connectionString,
      max: 4,
      connectionTimeoutMillis: 5_000,
    });
    // An idle client's error (the server restarting) must not crash the inspector; the next query reports it.
    pool.on("error", () => {});
    const options: { table?: string; schema?: string } = {};
    if (spec.table !== undefined) options.table = spec.table;
    if (spec.schema !== undefined) options.schema = spec.schema;
    const store = postgresStore(pool, options);
    return { store, label, close: () => store.close().finally(() => pool.end()) };
  }
  const { Redis } = await importPeer(label, "ioredis", () => import("ioredis"));
  const { redisStore } = await import("../redis/store.js");
  const client = new Redis(spec.url, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 5_000 });
  client.on("error", () => {});
  const store = redisStore(client, spec.prefix === undefined ? {} : { prefix: spec.prefix });
  return {
    store,
    label,
    close: () =>
      store.close().finally(() =>
        client.quit().then(
          () => undefined,
          () => client.disconnect(),
        ),
      ),
  };
}

/** Imports an optional peer dependency; its absence is a `StoreUrlError` saying what to install. */
export async function importPeer<M>(label: string, pkg: string, importer: () => Promise<M>): Promise<M> {
  try {
    return await importer();
  } catch (error) {
    const code = (error as { code?: string }).code;
    if ((code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") && String(error).includes(pkg)) {
      throw new StoreUrlError(label, `--store ${label} needs the "${pkg}" package: npm install ${pkg}`, {
        cause: error,
      });
    }
    throw error;
  }
}

function splitQuery(text: string): [string, string | undefined] {
  const at = text.indexOf("?");
  return at === -1 ? [text, undefined] : [text.slice(0, at), text.slice(at + 1)];
}

function known(shown: string, query: string | undefined, names: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(query ?? "")) {
    if (!names.includes(name)) {
      throw new StoreUrlError(
        shown,
        `--store ${shown}: unknown parameter ?${name}= (only ?${names.join("=, ?")}=)`,
      );
    }
    if (value === "") throw new StoreUrlError(shown, `--store ${shown}: ?${name}= is empty`);
    out[name] = value;
  }
  return out;
}
