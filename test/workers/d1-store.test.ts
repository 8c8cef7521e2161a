import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { d1Store } from "../../src/cloudflare/index.js";
import { testStore } from "../stores/contract.js";

// A table of its own per run: the suite's keys are unique, but D1's local file may outlive a run.
const table = `contract_${crypto.randomUUID().replaceAll("-", "")}`;

testStore("D1 (in workerd)", (clock) => d1Store(env.DB, { clock, table }));

describe("d1Store", () => {
  it("names the argument it refuses", () => {
    expect(() => d1Store({} as never)).toThrow(
      /^d1Store: db must be a D1 database binding \(env\.DB\), got an object$/,
    );
    expect(() => d1Store(env.DB, { table: "no-dashes" })).toThrow(/d1Store: options\.table/);
  });

  it("leaves the table sqliteStore's: the same columns, read with plain SQL", async () => {
    const store = d1Store(env.DB, { table });
    await store.claim("plain", { fingerprint: "fp", token: "t", leaseMs: 1_000, ttlMs: 60_000 });
    const row = await env.DB.prepare(`SELECT key, state, token FROM ${table} WHERE key = ?`)
      .bind("plain")
      .first();
    expect(row).toEqual({ key: "plain", state: "pending", token: "t" });
  });
});
