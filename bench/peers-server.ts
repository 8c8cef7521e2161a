import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import express from "express";
import { cpuWork } from "./middleware-handler.js";
import { type Charge, DUPLICATE_MARK, PEER_PATH, PEERS, type PeerRuns, REPLAY_MARK } from "./peers-apps.js";
import { type BenchMessage, cpuUs, type ServerMessage } from "./server-process.js";

/**
 * One contender of the peers bench in a process of its own: `peers-server.ts <peer> <prefix>` serves an Express app
 * whose one route is the handler behind that library. The handler (~200 µs of CPU, then a ~1 ms asynchronous write,
 * a timer standing for the owner's database) counts its own runs, by key for replay and duplicate keys, so that the
 * bench checks each library by what the handler did, not by what the library says.
 */
const [name, prefix] = process.argv.slice(2) as [string, string];
const peer = PEERS[name];
if (peer === undefined || prefix === undefined) throw new Error(`peers-server: unknown peer ${name}`);

let runs = 0;
let replayRuns = 0;
const byKey = new Map<string, number>();
const cpu = cpuWork();
const run = async (body: Charge, key: string | undefined) => {
  runs++;
  if (key?.includes(REPLAY_MARK)) replayRuns++;
  if (key?.includes(DUPLICATE_MARK)) byKey.set(key, (byKey.get(key) ?? 0) + 1);
  cpu();
  await sleep(1);
  return { id: `ch_${runs}`, amount: body.amount, currency: body.currency, status: "succeeded" };
};

const app = express();
app.use(express.json());
const close = await peer.mount(app, PEER_PATH, run, prefix);
// express-idempotency answers a duplicate in progress with next(error): Express's own handler would print its stack.
app.use((error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
  res.status(res.statusCode >= 400 ? res.statusCode : 500).json({ error: error.message });
});
const server: Server = await new Promise((resolve) => {
  const listening = app.listen(0, "127.0.0.1", () => resolve(listening));
});
const send = (message: ServerMessage<PeerRuns>) => process.send!(message);
send({ type: "ready", port: (server.address() as AddressInfo).port });

process.on("message", (message: BenchMessage) => {
  if (message.type === "runs")
    send({ type: "runs", runs, replayRuns, byKey: Object.fromEntries(byKey), cpuUs: cpuUs() });
  if (message.type === "close") {
    server.closeAllConnections();
    server.close();
    void close().finally(() => process.exit(0));
  }
});
