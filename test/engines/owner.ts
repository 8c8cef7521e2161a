import { appendFileSync, existsSync, readFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A fake owner of a side effect on a loopback listener. `POST /charges` dedupes on its Idempotency-Key header (a
 * repeat gets the first answer, no new effect); `POST /unguarded` takes no key and charges every time. Each effect
 * is appended to `effectsFile` as it happens, so a test counts effects independently of idemkey and of the engine,
 * even when the effect was taken for a process that was killed.
 */
export interface Owner {
  readonly url: string;
  /** The effects recorded so far: one `{ key, body }` per charge, in order. */
  effects(): { key: string | null; body: unknown }[];
  /** Requests that reached the owner, effects or replays, in order. */
  readonly requests: { path: string; key: string | null }[];
  close(): Promise<void>;
}

export interface OwnerOptions {
  effectsFile: string;
  /**
   * Called after the Nth request's effect is recorded and before it is answered: return "drop" to destroy the socket
   * instead of answering (the caller sees a lost reply), or do anything else (kill the worker) first.
   */
  afterEffect?: (n: number) => "drop" | undefined | Promise<"drop" | undefined>;
}

export async function startOwner(options: OwnerOptions): Promise<Owner> {
  const { effectsFile, afterEffect } = options;
  const answers = new Map<string, string>();
  const requests: Owner["requests"] = [];
  let effects = 0;
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : null;
    const header = req.headers["idempotency-key"];
    const key = req.url === "/charges" && typeof header === "string" ? header : null;
    requests.push({ path: req.url ?? "", key });
    const replay = key === null ? undefined : answers.get(key);
    if (replay !== undefined) {
      res.writeHead(200, { "content-type": "application/json", "idempotent-replayed": "true" }).end(replay);
      return;
    }
    effects += 1;
    appendFileSync(effectsFile, `${JSON.stringify({ key, body })}\n`);
    const answer = JSON.stringify({ id: `ch_${effects}`, amount: (body as { amount?: unknown })?.amount });
    if (key !== null) answers.set(key, answer);
    if ((await afterEffect?.(effects)) === "drop") {
      req.socket.destroy();
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end(answer);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    effects() {
      if (!existsSync(effectsFile)) return [];
      return readFileSync(effectsFile, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { key: string | null; body: unknown });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** POSTs a charge; the request a step's tool makes. Throws on a lost reply or a non-2xx answer. */
export async function charge(
  url: string,
  path: "/charges" | "/unguarded",
  amount: number,
  key: string | undefined,
): Promise<{ id: string; amount: number }> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (key !== undefined) headers["idempotency-key"] = key;
  const res = await fetch(url + path, { method: "POST", headers, body: JSON.stringify({ amount }) });
  if (!res.ok) throw new Error(`the owner answered ${res.status}`);
  return (await res.json()) as { id: string; amount: number };
}
