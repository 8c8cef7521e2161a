import { cpus, loadavg } from "node:os";
import { benchHarness } from "./harness.js";
import { benchKey } from "./key.js";
import { benchMiddleware } from "./middleware.js";
import { benchOtel } from "./otel.js";
import { benchPowertools } from "./powertools.js";

/** `npm run bench [section...]`: every section by default; figures go to BENCHMARKS.md by hand, with the machine. */
const sections: Record<string, () => Promise<void>> = {
  key: benchKey,
  harness: benchHarness,
  powertools: benchPowertools,
  middleware: benchMiddleware,
  otel: benchOtel,
};

const wanted = process.argv.slice(2);
const unknown = wanted.filter((name) => !(name in sections));
if (unknown.length > 0) {
  console.error(`bench: unknown section ${unknown.join(", ")}; known: ${Object.keys(sections).join(", ")}`);
  process.exit(2);
}
// The load average goes with the figures: on a shared machine it says how much they are worth.
const load = () =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(" ");
console.log(
  `node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? "unknown CPU"}, load ${load()}`,
);
for (const [name, run] of Object.entries(sections)) {
  if (wanted.length === 0 || wanted.includes(name)) await run();
}
console.log(`\nload average at the end: ${load()}`);
