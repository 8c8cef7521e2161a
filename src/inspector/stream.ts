import type { ServerResponse } from "node:http";
import type { Redactor } from "./redact.js";
import { Problem, sendProblem } from "./respond.js";
import type { Scanner } from "./snapshot.js";
import { counts } from "./views.js";

/** A comment line this often keeps proxies and the page's reader from timing an idle stream out. */
const PING_MS = 15_000;
/**
 * A client that has not read this much of what was sent to it is dropped rather than buffered for: a page reads
 * every event at once, so only a stalled or hostile reader falls this far behind.
 */
const MAX_BACKLOG_BYTES = 1024 * 1024;

export interface ChangeStream {
  /** Starts sending server-sent events to `res` until the client goes away, or refuses it (503) at the cap. */
  add(res: ServerResponse): void;
  /** How many streams are open. */
  readonly size: number;
  close(): void;
}

/**
 * The live view's change stream (server-sent events): while at least one page listens, the ledger is read every
 * `pollMs`, and each scan that differs from the last is sent as a `change` event with the counts and the keys that
 * changed. The store is polled because no store has a change feed in its contract; one poll serves every page.
 *
 * A new stream gets the last event sent (or the first poll's) on its own; nothing is sent again to the others, so
 * N streams cost N writes per change and opening them costs one write each. At most `maxStreams` are open at once:
 * each costs a socket and a write per change, and a page needs one.
 */
export function changeStream(
  scan: Scanner,
  pollMs: number,
  maxStreams: number,
  redact: Redactor,
): ChangeStream {
  const clients = new Set<ServerResponse>();
  let timer: NodeJS.Timeout | undefined;
  let pinger: NodeJS.Timeout | undefined;
  let sent = -1;
  let last: string | undefined;
  let failing = false;
  let polling = false;

  const writeTo = (res: ServerResponse, text: string) => {
    if (res.writableLength > MAX_BACKLOG_BYTES) res.destroy();
    else res.write(text);
  };
  const write = (event: string, data: unknown) => {
    const text = `event: ${event}\ndata: ${JSON.stringify(redact.strings(data))}\n\n`;
    if (event === "change") last = text;
    for (const res of clients) writeTo(res, text);
  };

  async function poll(): Promise<void> {
    if (polling) return;
    polling = true;
    try {
      const snapshot = await scan.latest(pollMs / 2);
      failing = false;
      if (snapshot.version !== sent) {
        sent = snapshot.version;
        write("change", { ...counts(snapshot, redact), changed: snapshot.changed.slice(0, 200) });
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
    // The next page to come finds the ledger as it is then, not the last event sent.
    last = undefined;
    sent = -1;
  }

  return {
    get size() {
      return clients.size;
    },
    add(res) {
      if (clients.size >= maxStreams) {
        return sendProblem(
          res,
          Problem.tooManyStreams,
          `${clients.size} live streams are open, the most this inspector serves; close a tab or reload later`,
          {},
          { "retry-after": "5" },
        );
      }
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
      // A new page gets the current state at once: the last event if there was one, else the first poll's.
      if (last !== undefined) writeTo(res, last);
      else void poll();
      timer ??= setInterval(() => void poll(), pollMs);
      pinger ??= setInterval(() => {
        for (const client of clients) writeTo(client, ": ping\n\n");
      }, PING_MS);
    },
    close() {
      stop();
      for (const res of clients) res.end();
      clients.clear();
    },
  };
}
