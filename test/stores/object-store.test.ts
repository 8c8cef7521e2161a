/*
 * objectStore and serveStore in Node: the contract suite through both halves joined without RPC (in workerd, over a
 * real stub: test/workers/object-store.test.ts), and their TypeErrors.
 */
import { describe, expect, it } from "vitest";
import { objectStore, type StoreObject, serveStore } from "../../src/cloudflare/index.js";
import { memoryStore } from "../../src/store/memory.js";
import { testStore } from "./contract.js";

testStore("objectStore over serveStore (memoryStore behind)", (clock) =>
  objectStore({ idemkeyStore: serveStore(memoryStore({ clock })) }),
);

describe("objectStore and serveStore options", () => {
  it("refuses what is not a stub or not a store, naming it", () => {
    expect(() => objectStore(null as unknown as StoreObject)).toThrow(/objectStore: stub must be/);
    expect(() => serveStore({} as never)).toThrow(/serveStore: store must be an idemkey store/);
  });

  it("serves only the store's own operations: close stays with the object that owns the store", async () => {
    const serve = serveStore(memoryStore());
    await expect(serve("close" as never, [])).rejects.toThrow(/has no close\(\) to serve/);
    await expect(serve("get", "k" as never)).rejects.toThrow(/args must be an array/);
  });
});
