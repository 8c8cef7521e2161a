import type { OpenedStore } from "../inspector/store-url.js";
import { StorePrefix } from "../store/scoped-key.js";
import type { Store } from "../store/types.js";
import { RunError } from "./errors.js";
import { openFailure } from "./store-failure.js";

/**
 * Opens a `--store` URL and reads from it once, so that a wrong password or a server not running fails here, in one
 * line, rather than in the middle of the command. `what` names the store in that line.
 */
export async function openChecked(
  storeUrl: string,
  what: string,
  read: (store: Store) => Promise<unknown>,
): Promise<OpenedStore> {
  const { openStore, parseStoreUrl } = await import("../inspector/store-url.js");
  parseStoreUrl(storeUrl);
  const opened = await openStore(storeUrl);
  try {
    await read(opened.store);
  } catch (error) {
    await opened.close().catch(() => {});
    throw new RunError(`cannot read the ${what} at ${opened.label}: ${openFailure(error)}`, { cause: error });
  }
  return opened;
}

/** `openChecked` for a harness's ledger: the inspector and the reconciler list its calls. */
export function openLedger(storeUrl: string): Promise<OpenedStore> {
  return openChecked(storeUrl, "ledger", (store) => store.list({ prefix: StorePrefix.ledger, limit: 1 }));
}
