import type { ServerResponse } from "node:http";
import type { Scanner } from "./snapshot.js";
import { counts } from "./views.js";

/** A comment line this often keeps proxies and the page's reader from timing an idle stream out. */
const PING_MS = 15_000;

export interface ChangeStream {
  /** Starts sending server-sent events to `res` until the client goes away. */
  add(res: ServerResponse): void;
  close(): void;
}

/**
 * The live view's change stream (server-sent events): while at least one page listens, the ledger is read every
 * `pollMs`, and each scan that differs from the last is sent as a `change` event with the counts and the keys that
 * changed. The store is polled because no store has a change feed in its contract; one poll serves every page.
 */
export function changeStream(scan: Scanner, pollMs: number): ChangeStream {
  const clients = new Set<ServerResponse>();
  let timer: NodeJS.Timeout | undefined;
  let pinger: NodeJS.Timeout | undefined;
  let sent = -1;
  let failing = false;
  let polling = false;

  const write = (event: string, data: unknown) => {
    const text = `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
    for (const res of clients) res.write(text);
  };

  async function poll(): Promise<void> {
    if (polling) return;
    polling = true;
    try {
      const snapshot = await scan.latest(pollMs / 2);
      failing = false;
      if (snapshot.version !== sent) {
        sent = snapshot.version;
        write("change", { ...counts(snapshot), changed: snapshot.changed.slice(0, 200) });
      }
    } catch (error) {
      if (!failing) write("store-error", { detail: (error as Error).message || String(error) });
      failing = true;
    } finally {
      polling = false;
    }
  }

  function stop(): void {
    clearInterval(timer);
    clearInterval(pinger);
    timer = pinger = undefined;
  }

  return {
    add(res) {
      res.writeHead(200, {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-store",
        "x-content-type-options": "nosniff",
        connection: "keep-alive",
      });
      res.write("retry: 2000\n\n");
      clients.add(res);
      res.on("close", () => {
        clients.delete(res);
        if (clients.size === 0) stop();
      });
      // A new page gets the current state at once.
      sent = -1;
      void poll();
      timer ??= setInterval(() => void poll(), pollMs);
      pinger ??= setInterval(() => {
        for (const client of clients) client.write(": ping\n\n");
      }, PING_MS);
    },
    close() {
      stop();
      for (const res of clients) res.end();
      clients.clear();
    },
  };
}
