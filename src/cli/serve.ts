import type { OpenedStore } from "../inspector/store-url.js";
import { RunError } from "./errors.js";
import { untilStopped } from "./until-stopped.js";

/**
 * Starts a server on an opened store, prints `banner` (where it listens), serves until SIGINT or SIGTERM, then
 * closes the server and the store. A server that cannot listen is one line naming `address`, the store closed.
 */
export async function serveUntilStopped<S extends { close(): Promise<void> }>(
  opened: OpenedStore,
  address: string,
  start: () => Promise<S>,
  banner: (served: S) => string,
): Promise<undefined> {
  let served: S;
  try {
    served = await start();
  } catch (error) {
    await opened.close().catch(() => {});
    throw new RunError(`cannot listen on ${address}: ${(error as Error).message}`);
  }
  process.stdout.write(banner(served));
  await untilStopped();
  await served.close();
  await opened.close().catch(() => {});
  return undefined;
}
