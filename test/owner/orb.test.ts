import Orb from "orb-billing";
import { afterEach, describe, expect, it } from "vitest";
import { memoryStore } from "../../src/store/memory.js";
import type { Store } from "../../src/store/types.js";
import { type LoopbackOwner, loopbackOwner } from "./loopback.js";

let owner: LoopbackOwner | undefined;
let store: Store | undefined;
afterEach(async () => {
  await owner?.close();
  await store?.close();
  owner = store = undefined;
});

/**
 * `orb-billing`, a Stainless-generated SDK, pointed at the loopback owner: it sends its own `Idempotency-Key` on
 * every POST and keeps it across its retries, which it makes on connection errors, 408, 409, 429 and 5xx unless
 * the answer says `x-should-retry`.
 */
const client = (url: string) => new Orb({ apiKey: "orb_test_idemkey", baseURL: `${url}/v1`, maxRetries: 3 });

describe("a real Stainless-generated SDK: orb-billing's own retries against the middleware", () => {
  it("takes effect once through a dropped response: the retry with its key gets the replay", async () => {
    store = memoryStore();
    owner = await loopbackOwner(store, (attempt) => (attempt === 1 ? "drop-after-effect" : undefined));
    const customer = await client(owner.url).customers.create({ email: "a@example.test", name: "A" });

    expect(customer.id).toBe("cus_1");
    expect(owner.log.effects).toHaveLength(1);
    const { attempts } = owner.log;
    expect(attempts).toHaveLength(2);
    expect(new Set(attempts.map((a) => a.key)).size).toBe(1);
    expect(attempts[0]!.key).toMatch(/^stainless-node-retry-/);
    expect(attempts[1]).toMatchObject({ status: 201, replayed: true });
  });

  it("stops retrying a final answer: a response too large to save is not asked for again", async () => {
    store = memoryStore();
    owner = await loopbackOwner(store, (attempt) => (attempt === 1 ? "drop-after-effect" : undefined), {
      maxResponseBytes: 256,
      padTo: 1024,
    });
    const created = client(owner.url).customers.create({ email: "b@example.test", name: "B" });

    const error = await created.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Orb.InternalServerError);
    expect(owner.log.effects).toHaveLength(1);
    // The dropped first attempt, then one replayed 500 that says x-should-retry: false; without it, three more.
    expect(owner.log.attempts.map((a) => [a.status, a.replayed])).toEqual([
      [undefined, undefined],
      [500, true],
    ]);
  });
});
