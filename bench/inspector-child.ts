import { serveInspector } from "../src/inspector/serve.js";
import { openStore } from "../src/inspector/store-url.js";

/**
 * One inspector process of the inspector bench: serves the ledger the store URL at argv[2] names (as `idemkey
 * inspect --store` does) and reports its own CPU time between the parent's "start" and "stop". With argv[3] "list"
 * the store's `changes` is hidden, so the inspector lists every record per poll, as a store without `changes` (or
 * the inspector before it used it) does.
 */
const [url, mode] = process.argv.slice(2);
const opened = await openStore(url!);
const store = mode === "list" ? { ...opened.store, changes: undefined } : opened.store;
// Above the default 10,000: the writer adds calls past it, and past maxRecords every read lists the first ones.
const served = await serveInspector({ store, user: "bench", maxRecords: 20_000 });
let started = process.cpuUsage();
process.on("message", async (message) => {
  if (message === "start") started = process.cpuUsage();
  if (message === "stop") {
    const used = process.cpuUsage(started);
    process.send!({ cpuMs: (used.user + used.system) / 1000 });
    await served.close();
    await opened.close();
    process.disconnect();
  }
});
process.send!({ url: served.url, token: served.token });
