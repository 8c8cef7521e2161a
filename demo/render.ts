import Table from "cli-table3";
import type { ChaosReport, ModeReport, OwnerReport } from "./run.js";

const PLAIN = { head: [], border: [], compact: true };
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const total = (mode: ModeReport, f: (o: OwnerReport) => number) => mode.owners.reduce((a, o) => a + f(o), 0);

/** One table per mode, one row per owner, counted from the owners' own databases. */
export function renderTables(report: ChaosReport): string {
  return report.modes.map((mode, i) => `${heading(mode, i)}\n${modeTable(mode)}`).join("\n\n");
}

function heading(mode: ModeReport, i: number): string {
  const { net, concurrent } = mode.faults;
  return (
    `Mode ${i + 1}: ${mode.title}\n` +
    `  faults: ${plural(mode.crashes, "worker killed", "workers killed")}, ` +
    `${plural(net["lost-response"], "answer", "answers")} lost after the effect, ${net["5xx"]} × 503, ` +
    `${plural(concurrent, "task")} given to two workers at once`
  );
}

function modeTable(mode: ModeReport): string {
  const table = new Table({
    head: [
      "owner (tool, effect)",
      "tool\ncalls",
      "requests\nreceived",
      "crashes",
      "effects\nexpected",
      "effects\nobserved",
      "dupli-\ncates",
      "owner\nreplays",
      "unknown\nsurfaced",
    ],
    style: PLAIN,
    colAligns: ["left", "right", "right", "right", "right", "right", "right", "right", "right"],
  });
  for (const o of mode.owners) {
    table.push([
      `${o.owner} (${o.tool}, ${o.effect})`,
      o.calls,
      o.attempts,
      o.crashes,
      o.expected,
      o.observed,
      o.duplicates,
      o.replays,
      o.effect === "unguarded" ? o.unknownSurfaced : "-",
    ]);
  }
  table.push([
    "all owners",
    total(mode, (o) => o.calls),
    total(mode, (o) => o.attempts),
    mode.crashes,
    total(mode, (o) => o.expected),
    total(mode, (o) => o.observed),
    total(mode, (o) => o.duplicates),
    total(mode, (o) => o.replays),
    total(mode, (o) => o.unknownSurfaced),
  ]);
  return table.toString();
}

/**
 * How long each mode took: the one figure that differs between two runs of a seed, so it is kept out of the report
 * (the demo prints it on stderr, beside the progress bar).
 */
export function renderTimings(report: ChaosReport): string {
  return `wall time: ${report.modes.map((m) => `${m.mode} ${seconds(m.wallMs)}`).join(", ")}`;
}

/** The modes side by side, then in plain words which crash window each one left open. */
export function renderSummary(report: ChaosReport): string {
  const table = new Table({
    head: ["mode", "duplicate\neffects", "silent repeats\nof the email", "unknown\nsurfaced"],
    style: PLAIN,
    colAligns: ["left", "right", "right", "right"],
  });
  for (const m of report.modes) {
    table.push([
      m.title,
      total(m, (o) => o.duplicates),
      total(m, (o) => o.silentRepeats),
      total(m, (o) => o.unknownSurfaced),
    ]);
  }
  return `${table.toString()}\n\n${report.modes.map(explain).join("\n\n")}`;
}

function explain(mode: ModeReport): string {
  const dupes = total(mode, (o) => o.duplicates);
  const dup = (name: string) => mode.owners.find((o) => o.owner === name)?.duplicates ?? 0;
  const byOwner =
    `${plural(dup("git host"), "extra pull request")}, ${plural(dup("payments"), "extra charge")}, ` +
    `${plural(dup("email"), "extra email")}`;
  const causes = { retry: 0, replay: 0, concurrent: 0 };
  for (const o of mode.owners) {
    causes.retry += o.causes.retry;
    causes.replay += o.causes.replay;
    causes.concurrent += o.causes.concurrent;
  }
  const surfaced = total(mode, (o) => o.unknownSurfaced);
  const ownerReplays = total(mode, (o) => o.replays);

  if (mode.mode === "idemkey") {
    const clean = dupes === 0 && mode.unsurfaced.length === 0;
    const lines = [
      `Mode 3, ${mode.title}: ${clean ? "every effect happened once" : `${dupes} DUPLICATES (${byOwner})`}.`,
      `  Lost answers and crashes after the owner's effect: the retry or replay carried the same key, and the ` +
        `owners answered ${plural(ownerReplays, "time")} from their record of it instead of acting again.`,
      `  Replays and concurrent copies: the ledger is durable and shared, so they found each call recorded (or ` +
        `running, and waited), and the reworded PR title was the same call by its identity (repo, head).`,
      `  The email honours no key: the harness never resent one it had lost track of, it surfaced ` +
        `${plural(surfaced, "OutcomeUnknownError")} and the agent checked the email owner's record before ` +
        `resolving each.`,
    ];
    if (mode.unsurfaced.length > 0) lines.push(`  NOT SURFACED: ${mode.unsurfaced.join(", ")}`);
    return lines.join("\n");
  }

  const naive = mode.mode === "naive";
  const lines = [`Mode ${naive ? 1 : 2}, ${mode.title}: ${plural(dupes, "duplicate effect")} (${byOwner}).`];
  lines.push(
    `  Window left open, the answer lost after the owner acted: ${plural(causes.retry, "duplicate")}. ` +
      (naive
        ? "The retry carried no key, so the owner took it for a new request."
        : `The ledger knew the retry was the same call, but the key never left the worker, so the owners could ` +
          `not; only the email was spared (${plural(surfaced, "unknown outcome")} surfaced instead of resent).`),
  );
  lines.push(
    `  Window left open, a crash after the owner's effect (or any later crash): ${plural(causes.replay, "duplicate")}. ` +
      (naive
        ? "Nothing recorded what a killed worker had done, so the replay ran every call again."
        : "The ledger lived in the worker's memory and died with it, so the replay ran every call again."),
  );
  lines.push(
    `  Window left open, the same task on two workers at once: ${plural(causes.concurrent, "duplicate")}. ` +
      (naive ? "Nothing was shared between the two." : "Each worker had a ledger of its own."),
  );
  return lines.join("\n");
}
