import { driverFor, storeDrivers } from "../drivers/list.js";
import { MissingPeerError } from "../errors/missing-peer-error.js";
import { importPeer as importPeerOf } from "../peer/import-peer.js";
import type { OpenedStore, StoreDriver, StoreUrlContext } from "../store/driver.js";
import { StoreUrlError } from "./store-url-error.js";

export type { OpenedStore } from "../store/driver.js";

/**
 * What a `--store` URL names, parsed without connecting: the driver's `engine` as `kind`, and the fields its `parse`
 * read (`{ kind: "sqlite", path, table }`, `{ kind: "postgres", connectionString, table, schema }`,
 * `{ kind: "redis", url, prefix }`).
 */
export type StoreUrl = { readonly kind: string } & Readonly<Record<string, string>>;

/** Masks the password of a URL's userinfo, so that it never reaches the page or a log line. */
export function maskUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:@/?#]*):[^@/?#]*@/i, "$1:***@");
}

/**
 * Parses a `--store` URL with the driver its scheme names (see `storeDrivers()`): `sqlite:<path>` (relative to the
 * working directory, or absolute; `?table=`), `postgres://` or `postgresql://` (`?table=`, `?schema=`; other
 * parameters go to `pg`), `redis://` or `rediss://` (`?prefix=`), and those of `registerDriver`. Throws
 * `StoreUrlError` for anything else.
 */
export function parseStoreUrl(url: string): StoreUrl {
  const { driver, fields } = resolve(url);
  return { kind: driver.engine, ...fields };
}

/**
 * Opens the store a `--store` URL names. The client packages are imported only for the kind asked for, so that a
 * SQLite inspector needs neither `pg` nor `ioredis`; a missing one is a `StoreUrlError` saying what to install.
 */
export async function openStore(url: string): Promise<OpenedStore> {
  const { driver, fields, context } = resolve(url);
  try {
    return await driver.open(fields, { ...context, label: context.shown });
  } catch (error) {
    throw missingPeer(driver, context.shown, error) ?? error;
  }
}

/** Imports an optional peer dependency; its absence is a `StoreUrlError` saying what to install. */
export async function importPeer<M>(label: string, pkg: string, importer: () => Promise<M>): Promise<M> {
  try {
    return await importPeerOf(label, pkg, importer);
  } catch (error) {
    throw error instanceof MissingPeerError ? needs(label, error) : error;
  }
}

function resolve(url: string) {
  const shown = maskUrl(url);
  const context: StoreUrlContext = {
    shown,
    fail(problem, options) {
      throw new StoreUrlError(shown, `--store ${shown}${problem}`, options);
    },
  };
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  const driver = scheme === undefined ? undefined : driverFor(scheme);
  if (driver === undefined) {
    const examples = storeDrivers().map((d) => d.example);
    const last = examples.pop();
    context.fail(
      ` is not a store URL; use ${examples.length > 0 ? `${examples.join(", ")} or ` : ""}${last}`,
    );
  }
  return { driver, fields: driver.parse(url, context), context };
}

/** A peer of the driver that is not installed, as the `StoreUrlError` the CLI prints; `undefined` for the rest. */
function missingPeer(driver: StoreDriver, label: string, error: unknown): StoreUrlError | undefined {
  if (!(error instanceof MissingPeerError)) return undefined;
  if (!driver.peers.some((peer) => peer.package === error.package)) return undefined;
  return needs(label, error);
}

const needs = (label: string, error: MissingPeerError) =>
  new StoreUrlError(
    label,
    `--store ${label} needs the "${error.package}" package: npm install ${error.package}`,
    {
      cause: error,
    },
  );
