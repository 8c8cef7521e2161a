import Database from "better-sqlite3";
import { describe, expect, expectTypeOf, it } from "vitest";
import type { EffectOnceLookup } from "../../src/owner/index.js";
import type { EffectOnceLookup as FromPostgres, PostgresEffectOnceLookup } from "../../src/postgres/index.js";
import {
  effectOnce,
  effectOnceLookup,
  type EffectOnceLookup as FromSqlite,
  type SqliteEffectOnceLookup,
} from "../../src/sqlite/index.js";

// One answer of an owner's key lookup, whichever store kept the key: the old names stay, as aliases of it.
describe("EffectOnceLookup: one type for what effectOnceLookup found, in every store", () => {
  it("is the type of PostgreSQL's and SQLite's names, old and new", () => {
    expectTypeOf<PostgresEffectOnceLookup<{ id: number }>>().toEqualTypeOf<
      EffectOnceLookup<{ id: number }>
    >();
    expectTypeOf<SqliteEffectOnceLookup<{ id: number }>>().toEqualTypeOf<EffectOnceLookup<{ id: number }>>();
    expectTypeOf<FromPostgres<string>>().toEqualTypeOf<EffectOnceLookup<string>>();
    expectTypeOf<FromSqlite<string>>().toEqualTypeOf<EffectOnceLookup<string>>();
  });

  it("is what SQLite's effectOnceLookup returns, for a key that committed and one never seen", () => {
    const db = new Database(":memory:");
    try {
      effectOnce(db, { key: "k1" }, () => ({ id: 7 }));
      const found: EffectOnceLookup<{ id: number }> = effectOnceLookup<{ id: number }>(db, { key: "k1" });
      expect(found).toEqual({ state: "completed", result: { id: 7 } });
      expect(effectOnceLookup(db, { key: "k2" })).toEqual({ state: "unknown" });
    } finally {
      db.close();
    }
  });
});
