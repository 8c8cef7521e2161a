import type { Store } from "../src/store/types.js";
import { apps, closeWork, FRAMEWORKS, type Framework, handlerRuns } from "./middleware-apps.js";
import { type BenchMessage, cpuUs, type ServerMessage } from "./server-process.js";
import { type OpenStore, openStore, STORE_NAMES, type StoreName, storeSlug } from "./stores.js";

/**
 * The owner the middleware benchmark loads, in a process of its own: `middleware-server.ts <framework> <store>...`
 * serves one framework's app with the handler bare and behind idemkey on each store named (the benchmark checked
 * that their servers answer). The handler counts its own runs, so that the benchmark can check that replays never
 * reach it without asking the middleware.
 */
const [framework, ...names] = process.argv.slice(2) as [Framework, ...StoreName[]];
if (!FRAMEWORKS.includes(framework)) throw new Error(`middleware-server: unknown framework ${framework}`);
const send = (message: ServerMessage) => process.send!(message);

const opened: OpenStore[] = [];
const stores = new Map<string, Store>();
for (const name of names) {
  if (!STORE_NAMES.includes(name)) throw new Error(`middleware-server: unknown store ${name}`);
  const store = await openStore(name);
  if (store === undefined) throw new Error(`middleware-server: ${name} stopped answering`);
  opened.push(store);
  stores.set(storeSlug(name), store.store);
}
const server = await apps[framework](stores);
send({ type: "ready", port: server.port });

process.on("message", (message: BenchMessage) => {
  if (message.type === "runs") send({ type: "runs", ...handlerRuns(), cpuUs: cpuUs() });
  if (message.type === "close") {
    void server
      .close()
      .then(() => Promise.all(opened.map((store) => store.close())))
      .then(closeWork)
      .finally(() => process.exit(0));
  }
});
