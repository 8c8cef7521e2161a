import Stripe from "stripe";
import { afterEach, describe, expect, it } from "vitest";
import { memoryStore } from "../../src/store/memory.js";
import type { Store } from "../../src/store/types.js";
import { type Fault, type LoopbackOwner, loopbackOwner } from "./loopback.js";

let owner: LoopbackOwner | undefined;
let store: Store | undefined;
afterEach(async () => {
  await owner?.close();
  await store?.close();
  owner = store = undefined;
});

/** The `stripe` package pointed at the local owner, with its own network retries (which reuse its key). */
function client(url: string, timeout = 10_000, maxNetworkRetries = 4): Stripe {
  const { port } = new URL(url);
  return new Stripe("sk_test_idemkey", {
    host: "127.0.0.1",
    port: Number(port),
    protocol: "http",
    maxNetworkRetries,
    timeout,
    telemetry: false,
  });
}

describe("a real third-party client: stripe-node's own retries against the middleware", () => {
  it("takes effect once per charges.create through a dropped response, an outage and a failing handler", async () => {
    const plans: Record<number, Fault[]> = {
      0: ["drop-after-effect"],
      1: ["unavailable", "drop-after-effect"],
      2: ["throw", "unavailable"],
    };
    let call = -1;
    const keysOfCall = new Map<string, number>();
    store = memoryStore();
    owner = await loopbackOwner(store, (attempt, key) => {
      if (attempt === 1) keysOfCall.set(key!, ++call);
      return plans[keysOfCall.get(key!)!]?.[attempt - 1];
    });
    const stripe = client(owner.url);

    const charges = [];
    for (const amount of [1000, 2000, 3000]) {
      charges.push(await stripe.charges.create({ amount, currency: "eur", source: "tok_visa" }));
    }

    // One effect per logical request, each under the key stripe chose for it and kept across its retries.
    const { effects, attempts } = owner.log;
    expect(effects.map((e) => (e.body as { amount: string }).amount)).toEqual(["1000", "2000", "3000"]);
    expect(charges.map((c) => c.id)).toEqual(["ch_1", "ch_2", "ch_3"]);
    const keys = effects.map((e) => e.key);
    expect(new Set(keys).size).toBe(3);
    for (const key of keys) expect(key).toMatch(/^stripe-node-retry-/);
    expect(attempts.map((a) => keys.indexOf(a.key!))).toEqual([0, 0, 1, 1, 1, 2, 2, 2]);
    expect(attempts.map((a) => [a.status, a.replayed])).toEqual([
      [undefined, undefined],
      [200, true],
      [503, false],
      [undefined, undefined],
      [200, true],
      [500, false],
      [503, false],
      [200, false],
    ]);
  });

  it("charges once when the handler charged and then threw: stripe's retries get the saved 500, not a rerun", async () => {
    store = memoryStore();
    owner = await loopbackOwner(store, (attempt) => (attempt === 1 ? "throw-after-effect" : undefined));
    const stripe = client(owner.url, 10_000, 2);
    const error = await stripe.charges.create({ amount: 700, currency: "eur", source: "tok_visa" }).then(
      () => undefined,
      (e: unknown) => e,
    );

    expect(error).toBeInstanceOf(Stripe.errors.StripeAPIError);
    expect(owner.log.effects).toHaveLength(1);
    // stripe-node retries a 5xx (it reads stripe-should-retry, not x-should-retry): every retry is the replay.
    expect(owner.log.attempts.map((a) => [a.status, a.replayed])).toEqual([
      [500, false],
      [500, true],
      [500, true],
    ]);
    expect(new Set(owner.log.attempts.map((a) => a.key)).size).toBe(1);
  });

  it("waits out the 409 of a retry that overtook a slow first attempt, then gets the replay", async () => {
    store = memoryStore();
    owner = await loopbackOwner(store, (attempt) => (attempt === 1 ? "slow" : undefined));
    // The first attempt times out on the client while the handler is held; the retry finds the key in flight (409),
    // which releases the handler; stripe retries the 409 and gets the saved response.
    const stripe = client(owner.url, 300);
    const charge = await stripe.charges.create({ amount: 500, currency: "usd", source: "tok_visa" });

    expect(charge.id).toBe("ch_1");
    expect(owner.log.effects).toHaveLength(1);
    const { attempts } = owner.log;
    expect(new Set(attempts.map((a) => a.key)).size).toBe(1);
    // The held first attempt's answer goes to a client that gave up on it; the retries see 409, then the replay.
    expect(attempts[1]!.status).toBe(409);
    expect(attempts.at(-1)).toMatchObject({ status: 200, replayed: true });
  });
});
