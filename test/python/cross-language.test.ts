import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createHarness } from "../../src/harness/index.js";
import { encodeData, newCall } from "../../src/harness/ledger.js";
import { listRecords } from "../../src/inspector/list.js";
import { keyHash } from "../../src/key/idempotency-key.js";
import { canonicalize, idempotencyKey } from "../../src/key/index.js";
import { sharedBackends } from "./backends.js";
import { requirePython, skipWithoutPython } from "./support.js";
import { ARGS, type Call, type Result } from "./worker-protocol.js";
import { owner, run, start, together, until, waitFor } from "./workers.js";

// A TypeScript and a Python harness on one ledger, counted at a fake owner: a file each tool appends its start and
// its effect to (python/tests/worker.py and fixtures/worker.ts, the same tools in each language).

const noPython = skipWithoutPython("test/python/cross-language.test.ts");
const dir = mkdtempSync(join(tmpdir(), "idemkey-xlang-"));
// Shared servers: a table and a prefix of this run's own, dropped and deleted afterwards (never a flush).
const { backends: BACKENDS, cleanup } = await sharedBackends(dir);
afterAll(async () => {
  await cleanup();
  rmSync(dir, { recursive: true, force: true });
});

/** Deterministic pseudo-random numbers, so that a failing schedule of kills can be run again. */
function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const shuffle = <T>(items: T[], random: () => number) =>
  items
    .map((item) => ({ item, r: random() }))
    .sort((a, b) => a.r - b.r)
    .map((x) => x.item);

for (const backend of BACKENDS) {
  describe.skipIf(noPython || backend.skip !== undefined)(
    `TypeScript and Python workers on ${backend.name}`,
    () => {
      it("race on the same keys under a SIGKILL loop: each key's effect reaches the owner under one key, an unguarded one never twice", async () => {
        requirePython();
        const spec = backend.spec("race");
        const ownerFile = join(dir, `${backend.name}-race.jsonl`.replace(/ /g, "-"));
        const random = seeded(47);
        const calls: Call[] = Array.from({ length: 64 }, (_, i) => ({
          task: `race-${i}`,
          effect: i % 3 === 0 ? "keyed" : i % 3 === 1 ? "unguarded" : "idempotent",
        }));
        // Rounds of one worker per language, both SIGKILLed: one (each language in turn) inside its second tool run,
        // after the tool started (it hangs there), the other at a pseudo-random moment (or inside its fourth
        // run, where it hangs, if that comes first). At most 6 runs a round: the 8 rounds never run out of calls, so
        // every round cuts one call mid-tool, whatever the machine's speed. Then both run to the end.
        const rounds = 8;
        for (let round = 0; round < rounds; round++) {
          const cutter = round % 2;
          // Its first run completes (an effect in each language, every other round), its second hangs.
          const hangAt = 2;
          const workers = await together(
            (["python", "ts"] as const).map((lang, i) =>
              start(lang, {
                store: spec,
                owner: ownerFile,
                calls: shuffle(calls, random),
                leaseMs: 400,
                ready: true,
                toolMs: 150,
                hangAt: i === cutter ? hangAt : 4,
              }),
            ),
          );
          const other = workers[1 - cutter]!;
          setTimeout(() => other.child.kill("SIGKILL"), 100 + random() * 500);
          const cut = workers[cutter]!;
          const pid = cut.child.pid;
          // One read of the owner file a poll (a check per line read it again for every line).
          await waitFor(
            `${hangAt} tool runs of the cut worker`,
            () => owner(ownerFile).filter((l) => l.event === "start" && l.pid === pid).length >= hangAt,
          );
          cut.child.kill("SIGKILL");
          await Promise.all(workers.map((w) => w.done));
        }
        const last = await together(
          (["python", "ts"] as const).map((lang) =>
            start(lang, { store: spec, owner: ownerFile, calls, leaseMs: 400, ready: true }),
          ),
        );
        const [python = [], ts = []] = (await Promise.all(last.map((w) => w.done))) as Result[][];
        expect(python).toHaveLength(calls.length);
        expect(ts).toHaveLength(calls.length);
        const lines = owner(ownerFile);
        const keys = calls.map((call) => idempotencyKey(call.task, `deploy-${call.effect}`, ARGS));
        // Every attempt in either language carried its call's one key: the owner, deduping on it, applies it once.
        expect(lines.filter((l) => !keys.includes(l.key))).toEqual([]);
        // The loop did cut calls mid-tool (a start with no effect from that process), and both languages ran tools.
        const cut = lines.filter(
          (s) =>
            s.event === "start" &&
            !lines.some((e) => e.event === "effect" && e.pid === s.pid && e.key === s.key),
        );
        expect(cut.length).toBeGreaterThanOrEqual(rounds);
        expect(new Set(lines.filter((l) => l.event === "effect").map((l) => l.lang))).toEqual(
          new Set(["python", "ts"]),
        );
        for (const [i, call] of calls.entries()) {
          const key = keys[i]!;
          const effects = lines.filter((l) => l.key === key && l.event === "effect");
          const starts = lines.filter((l) => l.key === key && l.event === "start");
          const p = python[i]!;
          const t = ts[i]!;
          if (call.effect === "unguarded") {
            // Never sent to the owner twice: a started attempt may have taken effect, whoever was killed after it.
            expect({ task: call.task, starts: starts.length <= 1 }).toEqual({
              task: call.task,
              starts: true,
            });
            // Both languages agree: the same recorded result, or the same unknown outcome.
            expect(p.error ?? p.value).toEqual(t.error ?? t.value);
            if (p.error === undefined) expect(effects).toHaveLength(1);
          } else {
            expect(p.value).toEqual(t.value);
            expect(effects.length).toBeGreaterThanOrEqual(1);
            // The recorded result is one of the effects the owner saw.
            expect(effects.some((e) => e.pid === p.value!.pid)).toBe(true);
          }
        }
        const store = await backend.open(spec);
        try {
          const entries = await createHarness({ store }).list({ limit: 1000 });
          expect(entries).toHaveLength(calls.length);
        } finally {
          await store.close();
        }
      }, 240_000);

      for (const [first, second] of [
        ["python", "ts"],
        ["ts", "python"],
      ] as const) {
        it(`a call started in ${first === "ts" ? "TypeScript" : "Python"} and completed in ${second === "ts" ? "TypeScript" : "Python"} replays in both`, async () => {
          requirePython();
          const spec = backend.spec(`handoff-${first}`);
          const ownerFile = join(dir, `${backend.name}-handoff-${first}.jsonl`.replace(/ /g, "-"));
          const calls: Call[] = [{ task: `handoff-${first}`, effect: "keyed" }];
          const hung = start(first, { store: spec, owner: ownerFile, calls, leaseMs: 300, hang: true });
          await until(ownerFile, (l) => l.event === "start" && l.lang === first);
          hung.child.kill("SIGKILL");
          await hung.done;
          const [taken] = await run(second, { store: spec, owner: ownerFile, calls, leaseMs: 300 });
          expect(taken).toMatchObject({ replayed: false, value: { by: second, attempt: 2 } });
          const [again] = await run(first, { store: spec, owner: ownerFile, calls, leaseMs: 300 });
          const [third] = await run(second, { store: spec, owner: ownerFile, calls, leaseMs: 300 });
          expect(again).toEqual({ ...taken, replayed: true });
          expect(third).toEqual({ ...taken, replayed: true });
          const key = idempotencyKey(calls[0]!.task, "deploy-keyed", ARGS);
          expect(owner(ownerFile).map((l) => [l.event, l.lang, l.key, l.attempt])).toEqual([
            ["start", first, key, 1],
            ["start", second, key, 2],
            ["effect", second, key, undefined],
          ]);
        }, 120_000);
      }

      it("the TypeScript inspector and harness list and read Python's records", async () => {
        requirePython();
        const spec = backend.spec("inspect");
        const ownerFile = join(dir, `${backend.name}-inspect.jsonl`.replace(/ /g, "-"));
        const calls: Call[] = [
          { task: "inspect-1", effect: "keyed" },
          { task: "inspect-2", effect: "unguarded" },
        ];
        await run("python", { store: spec, owner: ownerFile, calls });
        const store = await backend.open(spec);
        try {
          const { records } = await listRecords(store);
          const listed = records.filter((r) => r.kind === "call") as unknown as {
            key: string;
            tool: string;
            state: string;
          }[];
          expect(listed.map((r) => [r.tool, r.state]).sort()).toEqual([
            ["deploy-keyed", "completed"],
            ["deploy-unguarded", "completed"],
          ]);
          const harness = createHarness({ store });
          const entry = await harness.get(idempotencyKey("inspect-2", "deploy-unguarded", ARGS));
          expect(entry).toMatchObject({ taskId: "inspect-2", effect: "unguarded", args: ARGS, attempts: 1 });
          expect(entry?.result).toMatchObject({ by: "python", attempt: 1 });
          // Python wrote, byte for byte, the data the TypeScript harness writes for the same call (format 1).
          const raw = await store.get(`call:${idempotencyKey("inspect-1", "deploy-keyed", ARGS)}`);
          const argsText = canonicalize(ARGS);
          const data = newCall({
            taskId: "inspect-1",
            tool: "deploy-keyed",
            effect: "keyed",
            step: undefined,
            argsHash: keyHash(argsText, undefined),
            args: argsText,
          });
          expect(raw?.data).toBe(encodeData(data, 1));
        } finally {
          await store.close();
        }
      }, 60_000);
    },
  );
}
