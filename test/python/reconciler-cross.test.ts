import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { defineTool } from "../../src/harness/index.js";
import { listRecords } from "../../src/inspector/list.js";
import { idempotencyKey } from "../../src/key/index.js";
import { createReconciler } from "../../src/reconciler/index.js";
import type { Store } from "../../src/store/types.js";
import { sharedBackends } from "./backends.js";
import { requirePython, skipWithoutPython } from "./support.js";
import { ARGS, type Call, type Config } from "./worker-protocol.js";
import { owner, run, start, until, waitFor } from "./workers.js";

// Python workers leave a ledger in every state a process can leave it in (completed; in flight under a lease that
// lapsed, keyed and unguarded; outcome unknown), the TypeScript inspector lists it and the TypeScript reconciler
// resolves it, then Python (and TypeScript) read the resolved records back. The reconciler's `reconcile` asks the
// fake owner, the file every tool appends its start and its effect to, which also counts the effects at the end.

const noPython = skipWithoutPython("test/python/reconciler-cross.test.ts");
const dir = mkdtempSync(join(tmpdir(), "idemkey-xrec-"));
const { backends, cleanup } = await sharedBackends(dir);
afterAll(async () => {
  await cleanup();
  rmSync(dir, { recursive: true, force: true });
});

const COMPLETED: Call = { task: "completed", effect: "keyed" };
const STOPPED_KEYED: Call = { task: "stopped-keyed", effect: "keyed" };
const STOPPED_UNGUARDED: Call = { task: "stopped-unguarded", effect: "unguarded" };
const LOST_ANSWER: Call = { task: "lost-answer", effect: "unguarded" };
const ALL = [COMPLETED, STOPPED_KEYED, STOPPED_UNGUARDED, LOST_ANSWER];
const keyOf = (call: Call) => idempotencyKey(call.task, `deploy-${call.effect}`, ARGS);

type Listed = {
  key: string;
  taskId: string;
  tool: string;
  state: string;
  attempts: number;
  leaseUntil: number | null;
  updatedAt: number;
  lastEvent: Record<string, unknown> | null;
};

// Keys the holder's short name, so that two listings name one claim alike.
const SECRET = "reconciler-cross-listing";

/** The inspector's listing of the ledger's calls (what `idemkey inspect --list` prints), by task. */
async function listed(store: Store): Promise<Record<string, Listed>> {
  const { records } = await listRecords(store, { secret: SECRET });
  const calls = records.filter((r) => r.kind === "call") as unknown as Listed[];
  return Object.fromEntries(calls.map((call) => [call.taskId, call]));
}

/** The owner's answer to "did this key take effect?": its effects under the key, read from the owner file. */
function effectsAt(file: string, key: string) {
  return owner(file).filter((l) => l.key === key && l.event === "effect");
}

for (const backend of backends) {
  describe.skipIf(noPython || backend.skip !== undefined)(
    `The TypeScript reconciler and inspector on Python's records on ${backend.name}`,
    () => {
      for (const version of [1, 2] as const) {
        it(`in ledger format ${version}: listed with their states, resolved once, and read back in both languages with each effect once at the owner`, async () => {
          requirePython();
          const spec = backend.spec(`reconcile-v${version}`);
          const ownerFile = join(dir, `${backend.name}-reconcile-v${version}.jsonl`.replace(/ /g, "-"));
          const base: Omit<Config, "calls"> = {
            store: spec,
            owner: ownerFile,
            leaseMs: 300,
            ledgerVersion: version,
          };

          // Python leaves the records: one completed, one whose answer was lost (its effect did happen), and two
          // killed mid-tool, after their start reached the owner and before their effect.
          const [completed] = await run("python", { ...base, calls: [COMPLETED] });
          expect(completed).toMatchObject({ replayed: false, value: { by: "python", attempt: 1 } });
          const [lost] = await run("python", { ...base, calls: [LOST_ANSWER], loseAnswer: true });
          expect(lost).toMatchObject({ error: "OutcomeUnknownError" });
          for (const call of [STOPPED_KEYED, STOPPED_UNGUARDED]) {
            const hung = start("python", { ...base, calls: [call], hang: true });
            await until(ownerFile, (l) => l.event === "start" && l.key === keyOf(call));
            hung.child.kill("SIGKILL");
            await hung.done;
          }

          const store = await backend.open(spec);
          try {
            // The killed workers' leases lapse on their own (nobody renews them): wait until both have.
            await waitFor("the killed workers' leases to lapse", async () => {
              const records = await Promise.all(
                [STOPPED_KEYED, STOPPED_UNGUARDED].map((c) => store.get(`call:${keyOf(c)}`)),
              );
              return records.every((r) => r?.leaseUntil != null && r.leaseUntil < Date.now());
            });
            const before = await listed(store);
            expect(Object.keys(before).sort()).toEqual(ALL.map((c) => c.task).sort());
            expect(before[COMPLETED.task]).toMatchObject({
              key: keyOf(COMPLETED),
              tool: "deploy-keyed",
              state: "completed",
              attempts: 1,
            });
            // Keyed tools are counted at the end, unguarded ones before each attempt starts.
            expect(before[STOPPED_KEYED.task]).toMatchObject({ state: "pending", attempts: 0 });
            expect(before[STOPPED_UNGUARDED.task]).toMatchObject({ state: "pending", attempts: 1 });
            expect(before[STOPPED_KEYED.task]!.leaseUntil).toBeLessThan(Date.now());
            expect(before[STOPPED_UNGUARDED.task]!.leaseUntil).toBeLessThan(Date.now());
            expect(before[LOST_ANSWER.task]).toMatchObject({
              tool: "deploy-unguarded",
              state: "outcome_unknown",
              attempts: 1,
              lastEvent: { type: "outcome_unknown" },
            });

            // The reconciler asks the owner about each unguarded call that may have taken effect, and only those.
            const asked: string[] = [];
            const deploy = defineTool<typeof ARGS, unknown>({
              name: "deploy-unguarded",
              effect: "unguarded",
              run: () => {
                throw new Error("a reconciler never runs a tool");
              },
              reconcile: (_args, ctx) => {
                asked.push(ctx.idempotencyKey);
                const effects = effectsAt(ownerFile, ctx.idempotencyKey);
                return effects.length === 0
                  ? { status: "not_done", evidence: { effects: 0 } }
                  : {
                      status: "done",
                      result: { by: "owner", pid: effects[0]!.pid },
                      evidence: { effects: effects.length },
                    };
              },
            });
            const reconciler = createReconciler({ store, tools: [deploy], id: "xlang-reconciler" });
            expect(await reconciler.sweep()).toEqual({
              examined: 3,
              done: 1,
              notDone: 1,
              undecided: 0,
              skipped: 1,
              conflict: 0,
              failed: 0,
            });
            expect(asked.sort()).toEqual([keyOf(STOPPED_UNGUARDED), keyOf(LOST_ANSWER)].sort());
            // Decided once: a second sweep finds nothing left to decide, only the keyed call for its next run.
            expect(await reconciler.sweep()).toMatchObject({ examined: 1, done: 0, notDone: 0, skipped: 1 });
            expect(asked).toHaveLength(2);

            const after = await listed(store);
            expect(after[LOST_ANSWER.task]).toMatchObject({
              state: "completed",
              lastEvent: {
                type: "resolved",
                how: "reconcile",
                outcome: "done",
                by: "xlang-reconciler",
                evidence: { effects: 1 },
              },
            });
            expect(after[STOPPED_UNGUARDED.task]).toMatchObject({
              state: "approved",
              lastEvent: { type: "resolved", how: "reconcile", outcome: "not_done", by: "xlang-reconciler" },
            });
            // Left for its next call to take over, and the completed one untouched.
            expect(after[STOPPED_KEYED.task]).toEqual(before[STOPPED_KEYED.task]);
            expect(after[COMPLETED.task]).toEqual(before[COMPLETED.task]);
            // The reconciler wrote each record back in the format Python wrote it in.
            for (const call of ALL) {
              const raw = await store.get(`call:${keyOf(call)}`);
              expect({ task: call.task, v: JSON.parse(raw!.data!).v }).toEqual({
                task: call.task,
                v: version,
              });
            }
          } finally {
            await store.close();
          }

          // Python reads the resolved records back: the completed call and the one found done replay; the approved
          // one and the lapsed keyed one run (their effect had not happened).
          const lostAnswer = effectsAt(ownerFile, keyOf(LOST_ANSWER))[0]!;
          const resolved = await run("python", { ...base, calls: ALL });
          expect(resolved).toEqual([
            { task: COMPLETED.task, value: completed!.value, replayed: true },
            {
              task: STOPPED_KEYED.task,
              value: expect.objectContaining({ by: "python", attempt: 2 }),
              replayed: false,
            },
            {
              task: STOPPED_UNGUARDED.task,
              value: expect.objectContaining({ by: "python", attempt: 2 }),
              replayed: false,
            },
            { task: LOST_ANSWER.task, value: { by: "owner", pid: lostAnswer.pid }, replayed: true },
          ]);
          // And every call now replays, in Python and in TypeScript alike.
          const replayed = resolved.map((r) => ({ ...r, replayed: true }));
          expect(await run("python", { ...base, calls: ALL })).toEqual(replayed);
          expect(await run("ts", { ...base, calls: ALL })).toEqual(replayed);

          // Counted at the owner: each call's effect once; the killed ones started twice (killed, then run).
          const lines = owner(ownerFile);
          const count = (call: Call, event: "start" | "effect") =>
            lines.filter((l) => l.key === keyOf(call) && l.event === event).length;
          expect(ALL.map((c) => [c.task, count(c, "start"), count(c, "effect")])).toEqual([
            [COMPLETED.task, 1, 1],
            [STOPPED_KEYED.task, 2, 1],
            [STOPPED_UNGUARDED.task, 2, 1],
            [LOST_ANSWER.task, 1, 1],
          ]);
        }, 120_000);
      }
    },
  );
}
