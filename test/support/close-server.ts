import { once } from "node:events";
import type http from "node:http";
import { onTestFinished } from "vitest";

/**
 * Closes `server` when the running test ends, passed or failed, and returns it. Its open connections are cut first:
 * `close()` alone waits for keep-alive sockets (fetch keeps them) to go idle. A server the test closed itself is
 * left as it is.
 */
export function closedAfterTest<S extends http.Server>(server: S): S {
  onTestFinished(async () => {
    server.closeAllConnections();
    if (!server.listening) return;
    server.close();
    await once(server, "close");
  });
  return server;
}
