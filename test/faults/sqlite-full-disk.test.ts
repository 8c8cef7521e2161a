import { execFileSync } from "node:child_process";
import { appendFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, describe, expect, it } from "vitest";
import { StoreError } from "../../src/errors/index.js";
import { createHarness, defineTool, OutcomeUnknownError } from "../../src/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { onCleanup } from "../support/cleanup.js";
import { effectLog } from "../support/effect-log.js";

/**
 * Issue 11: SQLite on a filesystem that is really full, a small tmpfs of the test's own (mounted here, unmounted in
 * cleanup even when the test fails), not only a database capped by max_page_count. Mounting needs root (or
 * CAP_SYS_ADMIN): without it the suite is skipped with a line that says why.
 */
const dir = mkdtempSync(join(tmpdir(), "idemkey-full-disk-"));
const mnt = join(dir, "mnt");
mkdirSync(mnt);
let unmountable: string | undefined;
try {
  execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt], { stdio: "pipe" });
} catch (error) {
  unmountable = String((error as { stderr?: Buffer }).stderr ?? (error as Error).message).trim();
}
const unmount = () => {
  if (unmountable === undefined) execFileSync("umount", ["-l", mnt], { stdio: "ignore" });
  rmSync(dir, { recursive: true, force: true });
};
const undo = onCleanup(unmount);
afterAll(() => undo());
if (unmountable !== undefined) {
  console.warn(`SKIPPED SQLite full-disk tests: cannot mount a tmpfs (${unmountable})`);
}
const log = effectLog();
afterAll(() => log.cleanup());

/** Fills the filesystem to the last byte with a file of its own; returns a function that removes it. */
function fillDisk(): () => void {
  const filler = join(mnt, `filler-${Math.random()}`);
  const chunk = Buffer.alloc(4_096, 1);
  try {
    for (;;) appendFileSync(filler, chunk);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
  }
  try {
    for (;;) appendFileSync(filler, Buffer.alloc(1, 1));
  } catch {}
  return () => rmSync(filler, { force: true });
}

/** The SQLite error code somewhere in a StoreError's cause chain. */
function sqliteCode(error: unknown): string | undefined {
  for (let e = error as { cause?: unknown; code?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (typeof e.code === "string" && e.code.startsWith("SQLITE_")) return e.code;
  }
  return undefined;
}

(unmountable === undefined ? describe : describe.skip)("SQLite on a full tmpfs", () => {
  it("SQLITE_FULL reaches callers as StoreError, and a tool whose outcome could not be written never runs again", async () => {
    const store = sqliteStore(join(mnt, "ledger.db"));
    let free: (() => void) | undefined;
    const tool = defineTool({
      name: "sendEmail",
      effect: "unguarded",
      run: async (args: { to: string }, ctx) => {
        log.effect(ctx.idempotencyKey);
        // The disk fills between the effect and its completion record.
        if (args.to === "first") free = fillDisk();
        return "sent";
      },
    });
    const leaseMs = 300;
    const harness = createHarness({ store, leaseMs });
    const key = harness.key("task", tool, { to: "first" });

    // The completion write fails on the full disk (retried across the save budget, then surfaced): the call fails
    // with a StoreError saying the tool ran, and the key is left locked.
    const first = await harness.call("task", tool, { to: "first" }).catch((e: unknown) => e);
    expect(first).toBeInstanceOf(StoreError);
    expect(sqliteCode(first)).toBe("SQLITE_FULL");
    expect((first as Error).message).toMatch(/ran .*could not be recorded/);
    expect(log.count(key)).toBe(1);

    // A new key cannot be claimed while the disk is full: a StoreError whose cause is SQLITE_FULL, the tool not run.
    const other = await harness.call("task", tool, { to: "other" }).catch((e: unknown) => e);
    expect(other).toBeInstanceOf(StoreError);
    expect(sqliteCode(other)).toBe("SQLITE_FULL");
    expect(log.count(harness.key("task", tool, { to: "other" }))).toBe(0);

    // Past the lease, with the disk still full and then with room again: the key is taken over, never run afresh.
    await sleep(2 * leaseMs);
    const whileFull = await harness.call("task", tool, { to: "first" }).catch((e: unknown) => e);
    expect(whileFull).toBeInstanceOf(Error);
    expect(log.count(key)).toBe(1);
    free!();
    const again = await harness.call("task", tool, { to: "first" }).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(OutcomeUnknownError);
    expect(log.count(key)).toBe(1);
    // Room again: a new key goes through.
    await expect(harness.call("task", tool, { to: "other" })).resolves.toBe("sent");
    await store.close();
  });
  it("parallel calls on a full disk share a commit that fails: each fails with StoreError, none runs, all run once later", async () => {
    const store = sqliteStore(join(mnt, "grouped.db"));
    const tool = defineTool({
      name: "charge",
      effect: "unguarded",
      run: async (_args: { n: number }, ctx) => {
        log.effect(ctx.idempotencyKey);
        return "charged";
      },
    });
    const harness = createHarness({ store });
    await harness.call("warm", tool, { n: -1 }); // the file and its table made while there is room
    const calls = [0, 1, 2, 3, 4, 5];
    const keys = calls.map((n) => harness.key("grouped", tool, { n }));
    const free = fillDisk();
    try {
      const failed = await Promise.all(
        calls.map((n) => harness.call("grouped", tool, { n }).catch((e: unknown) => e)),
      );
      for (const error of failed) {
        expect(error).toBeInstanceOf(StoreError);
        expect(sqliteCode(error)).toBe("SQLITE_FULL");
      }
      expect(keys.map((key) => log.count(key))).toEqual(calls.map(() => 0));
    } finally {
      free();
    }
    await expect(Promise.all(calls.map((n) => harness.call("grouped", tool, { n })))).resolves.toEqual(
      calls.map(() => "charged"),
    );
    expect(keys.map((key) => log.count(key))).toEqual(calls.map(() => 1));
    await store.close();
  });
});
