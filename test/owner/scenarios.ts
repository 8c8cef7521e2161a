import { afterEach, describe, expect, it } from "vitest";
import { LeaseLostError } from "../../src/errors/lease-lost-error.js";
import { ResponseTooLargeError } from "../../src/errors/response-too-large-error.js";
import { StoreError } from "../../src/errors/store-error.js";
import { keyedId, randomSecret } from "../../src/inspector/keyed-id.js";
import { type KeyView, listKeys } from "../../src/inspector/owner-keys.js";
import { redactor } from "../../src/inspector/redact.js";
import type { IdempotencyErrorEvent } from "../../src/owner/options.js";
import type { Store } from "../../src/store/types.js";
import { type TestClock, testClock } from "../stores/contract.js";
import { flakyStore, isCompletion } from "../support/flaky-store.js";
import {
  type AppOptions,
  type Framework,
  hold,
  newOwner,
  type Owner,
  type TestApp,
  type TestResponse,
} from "./apps.js";

/** A store whose every method rejects, as one whose server is down. */
function failingStore(): Store {
  const down = () => Promise.reject(new Error("store is down"));
  return {
    claim: down,
    get: down,
    update: down,
    delete: down,
    list: down,
    purge: down,
    close: async () => {},
  };
}

/** The inspector's redaction, off. */
const asIs: KeyView = { redact: redactor([]), maskScope: false, id: keyedId(randomSecret()) };

const problemOf = (response: TestResponse) => {
  expect(response.header("content-type")).toMatch(/^application\/problem\+json/);
  const body = JSON.parse(response.body) as { type: string; title: string; status: number; detail: string };
  expect(body.status).toBe(response.status);
  expect(body.title.length).toBeGreaterThan(0);
  expect(body.detail.length).toBeGreaterThan(0);
  return body;
};

const charge = (key: string | string[] | undefined, body: unknown = { amount: 100 }, account?: string) => ({
  headers: {
    ...(key === undefined ? {} : { "idempotency-key": key }),
    ...(account === undefined ? {} : { "x-account": account }),
  },
  body: JSON.stringify(body),
});

/**
 * Every scenario of the owner side, through one framework's real request path on one kind of store. `makeStore`
 * gives each test a fresh store (its own table or prefix) on the test's clock.
 */
export function ownerSuite(
  framework: Framework,
  storeName: string,
  makeStore: (clock: TestClock) => Store | Promise<Store>,
  options: { skip?: string } = {},
): void {
  (options.skip ? describe.skip : describe)(`idempotency() on ${framework.name}, ${storeName} store`, () => {
    let app: TestApp | undefined;
    let store: Store | undefined;
    afterEach(async () => {
      await app?.close();
      await store?.close();
      app = undefined;
      store = undefined;
    });

    const start = async (options: Partial<AppOptions> & { wrap?: (store: Store) => Store } = {}) => {
      const clock = testClock();
      const { wrap, ...rest } = options;
      const made = await makeStore(clock);
      store = wrap ? wrap(made) : made;
      const owner: Owner = newOwner();
      const errors: IdempotencyErrorEvent[] = [];
      app = await framework.start(owner, { store, onError: (event) => errors.push(event), ...rest });
      return { app, owner, clock, errors, store };
    };

    it("runs the handler once for the first request, and replays it to an identical retry", async () => {
      const { app, owner } = await start();
      const first = await app.request(charge("key-1"));
      expect(first.status).toBe(201);
      expect(first.header("idempotent-replayed")).toBeUndefined();
      expect(first.header("x-not-kept")).toBe("ch_1");
      expect(owner.effects).toHaveLength(1);

      const retry = await app.request(charge("key-1"));
      expect(retry.status).toBe(201);
      expect(retry.body).toBe(first.body);
      expect(retry.header("idempotent-replayed")).toBe("true");
      expect(retry.header("location")).toBe("/charges/ch_1");
      expect(retry.header("content-type")).toBe(first.header("content-type"));
      expect(retry.header("x-not-kept")).toBeUndefined();
      expect(owner.effects).toHaveLength(1);
    });

    it("treats a JSON body with other member order and whitespace as the same request", async () => {
      const { app, owner } = await start();
      await app.request({ headers: { "idempotency-key": "k" }, body: '{"amount":100,"currency":"eur"}' });
      const retry = await app.request({
        headers: { "idempotency-key": "k" },
        body: '{ "currency": "eur",\n  "amount": 100 }',
      });
      expect(retry.status).toBe(201);
      expect(retry.header("idempotent-replayed")).toBe("true");
      expect(owner.effects).toHaveLength(1);
    });

    it("accepts the key as an RFC 8941 sf-string: quoted and bare are the same key", async () => {
      const { app, owner } = await start();
      expect((await app.request(charge('"key-q"'))).status).toBe(201);
      const bare = await app.request(charge("key-q"));
      expect(bare.header("idempotent-replayed")).toBe("true");
      const escaped = await app.request(charge('"a\\"b\\\\c"'));
      expect(escaped.status).toBe(201);
      expect(owner.effects).toHaveLength(2);
    });

    it("answers 422 to the same key with another body, without running the handler", async () => {
      const { app, owner } = await start();
      await app.request(charge("key-1", { amount: 100 }));
      const other = await app.request(charge("key-1", { amount: 200 }));
      expect(other.status).toBe(422);
      expect(problemOf(other).type).toBe("https://idemkey.dev/problems/key-reused");
      expect(owner.effects).toHaveLength(1);
    });

    it("answers 409 with Retry-After to a concurrent duplicate, and runs the handler once", async () => {
      const { app, owner } = await start({ retryAfterSeconds: 2 });
      const gate = hold(owner);
      const first = app.request(charge("key-1"));
      await gate.entered;
      const duplicate = await app.request(charge("key-1"));
      expect(duplicate.status).toBe(409);
      expect(duplicate.header("retry-after")).toBe("2");
      expect(problemOf(duplicate).type).toBe("https://idemkey.dev/problems/key-in-flight");
      gate.open();
      expect((await first).status).toBe(201);
      expect(owner.effects).toHaveLength(1);
      const retry = await app.request(charge("key-1"));
      expect(retry.header("idempotent-replayed")).toBe("true");
      expect(owner.effects).toHaveLength(1);
    });

    it("answers 400 to a covered request without a key, and passes it through when not required", async () => {
      const { app, owner } = await start();
      const missing = await app.request(charge(undefined));
      expect(missing.status).toBe(400);
      expect(problemOf(missing).type).toBe("https://idemkey.dev/problems/key-missing");
      expect(owner.effects).toHaveLength(0);
      const read = await app.request({ method: "GET" });
      expect(read.status).toBe(200);
      await app.close();

      const optional = await start({ required: false });
      expect((await optional.app.request(charge(undefined))).status).toBe(201);
      expect((await optional.app.request(charge(undefined))).status).toBe(201);
      expect(optional.owner.effects).toHaveLength(2);
    });

    it("keeps two scopes with the same key apart: neither replays, blocks nor conflicts with the other", async () => {
      const { app, owner } = await start();
      const alice = await app.request(charge("shared", { amount: 1 }, "alice"));
      const bob = await app.request(charge("shared", { amount: 2 }, "bob"));
      expect(alice.status).toBe(201);
      expect(bob.status).toBe(201);
      expect(bob.header("idempotent-replayed")).toBeUndefined();
      expect(owner.effects).toEqual([
        { account: "alice", body: { amount: 1 } },
        { account: "bob", body: { amount: 2 } },
      ]);
      const aliceRetry = await app.request(charge("shared", { amount: 1 }, "alice"));
      expect(aliceRetry.body).toBe(alice.body);
      expect(aliceRetry.header("idempotent-replayed")).toBe("true");

      const gate = hold(owner);
      const carol = app.request(charge("busy", {}, "carol"));
      await gate.entered;
      gate.open();
      expect((await app.request(charge("busy", {}, "dave"))).status).toBe(201);
      expect((await carol).status).toBe(201);
      expect(owner.effects).toHaveLength(4);
    });

    it("runs an expired key again, and purges expired records in batches", async () => {
      const { app, owner, clock, store } = await start({ retentionMs: 60_000 });
      await app.request(charge("key-1"));
      clock.advance(59_999);
      expect((await app.request(charge("key-1"))).header("idempotent-replayed")).toBe("true");
      clock.advance(1);
      const again = await app.request(charge("key-1"));
      expect(again.status).toBe(201);
      expect(again.header("idempotent-replayed")).toBeUndefined();
      expect(owner.effects).toHaveLength(2);

      for (let i = 0; i < 5; i++) await app.request(charge(`old-${i}`));
      clock.advance(60_000);
      expect(await app.purge({ batchSize: 2 })).toBe(6);
      expect(await store.list({ prefix: "http:" })).toEqual([]);
    });

    it(`does not run again a handler that threw after its effect: the retry gets ${framework.seesThrows ? "409 outcome-unknown" : "the error answer replayed"}`, async () => {
      const { app, owner, errors } = await start();
      owner.throwAfterEffect = 1;
      const failed = await app.request(charge("key-1"));
      expect(failed.status).toBe(500);
      expect(owner.effects).toHaveLength(1);
      for (const _ of [1, 2]) {
        const retry = await app.request(charge("key-1"));
        if (framework.seesThrows) {
          expect(retry.status).toBe(409);
          expect(problemOf(retry).type).toBe("https://idemkey.dev/problems/outcome-unknown");
          expect(retry.header("x-should-retry")).toBe("false");
        } else {
          // Express shows middleware only what the error handler sent: an answer, saved and replayed like any other.
          expect(retry.status).toBe(500);
          expect(retry.header("idempotent-replayed")).toBe("true");
          expect(retry.body).toBe(failed.body);
        }
      }
      expect(owner.effects).toHaveLength(1);
      expect(errors).toEqual([]);
    });

    it("does not run again a handler that threw without saying it had no effect", async () => {
      const { app, owner } = await start();
      owner.throwNext = 1;
      expect((await app.request(charge("key-1"))).status).toBe(500);
      const retry = await app.request(charge("key-1"));
      // Nobody said nothing happened, so the middleware cannot tell this throw from one after the effect.
      if (framework.seesThrows) {
        expect(retry.status).toBe(409);
        expect(problemOf(retry).type).toBe("https://idemkey.dev/problems/outcome-unknown");
      } else {
        expect(retry.status).toBe(500);
        expect(retry.header("idempotent-replayed")).toBe("true");
      }
      expect(owner.effects).toHaveLength(0);
    });

    it("does not run again a handler that threw a 4xx error", async () => {
      const { app, owner } = await start();
      owner.throwNext = 1;
      owner.throwStatus = 409;
      expect((await app.request(charge("key-1"))).status).toBe(409);
      const retry = await app.request(charge("key-1"));
      expect(retry.status).toBe(409);
      if (framework.seesThrows) {
        expect(problemOf(retry).type).toBe("https://idemkey.dev/problems/outcome-unknown");
      } else {
        expect(retry.header("idempotent-replayed")).toBe("true");
      }
      expect(owner.effects).toHaveLength(0);
    });

    it("releases the key when the handler throws an error with noEffect: true, so the retry runs it", async () => {
      const { app, owner } = await start();
      owner.throwNext = 1;
      owner.throwNoEffect = true;
      owner.throwStatus = 503;
      expect((await app.request(charge("key-1"))).status).toBe(503);
      expect(owner.effects).toHaveLength(0);
      const retry = await app.request(charge("key-1"));
      expect(retry.status).toBe(201);
      expect(retry.header("idempotent-replayed")).toBeUndefined();
      expect(owner.effects).toHaveLength(1);
      expect((await app.request(charge("key-1"))).header("idempotent-replayed")).toBe("true");
      expect(owner.effects).toHaveLength(1);
    });

    it("releases the key when the handler answers with markNoEffect, so the retry runs it", async () => {
      const { app, owner } = await start();
      owner.refuseNext = 1;
      const refused = await app.request(charge("key-1"));
      expect(refused.status).toBe(503);
      expect(owner.effects).toHaveLength(0);
      const retry = await app.request(charge("key-1"));
      expect(retry.status).toBe(201);
      expect(retry.header("idempotent-replayed")).toBeUndefined();
      expect(owner.effects).toHaveLength(1);
      expect((await app.request(charge("key-1"))).header("idempotent-replayed")).toBe("true");
      expect(owner.effects).toHaveLength(1);
    });

    it("saves a 5xx the handler answered after its effect, and replays it as Stripe does", async () => {
      const { app, owner } = await start();
      owner.status = 500;
      const first = await app.request(charge("key-1"));
      expect(first.status).toBe(500);
      owner.status = 201;
      const retry = await app.request(charge("key-1"));
      expect(retry.status).toBe(500);
      expect(retry.header("idempotent-replayed")).toBe("true");
      expect(retry.body).toBe(first.body);
      expect(owner.effects).toHaveLength(1);
    });

    it("lets `save` override the default: false releases a 5xx, true saves a thrown error's answer", async () => {
      const releasing = await start({ save: ({ status }) => (status === 503 ? false : undefined) });
      releasing.owner.status = 503;
      expect((await releasing.app.request(charge("key-1"))).status).toBe(503);
      expect((await releasing.app.request(charge("key-1"))).header("idempotent-replayed")).toBeUndefined();
      expect(releasing.owner.effects).toHaveLength(2);
      await releasing.app.close();

      const saving = await start({ save: ({ threw }) => (threw ? true : undefined) });
      saving.owner.throwAfterEffect = 1;
      const failed = await saving.app.request(charge("key-1"));
      expect(failed.status).toBe(500);
      const retry = await saving.app.request(charge("key-1"));
      expect(retry.status).toBe(500);
      expect(retry.header("idempotent-replayed")).toBe("true");
      expect(saving.owner.effects).toHaveLength(1);
    });

    it("still answers, and follows the default, when the save hook throws", async () => {
      const hookError = new Error("save hook bug");
      const { app, owner, errors } = await start({
        save: () => {
          throw hookError;
        },
      });
      expect((await app.request(charge("key-1"))).status).toBe(201);
      expect((await app.request(charge("key-1"))).header("idempotent-replayed")).toBe("true");
      expect(owner.effects).toHaveLength(1);
      expect(errors.map((e) => [e.phase, e.error])).toEqual([["save", hookError]]);
    });

    it("answers 503 when the store fails, and never runs the handler", async () => {
      const errors: IdempotencyErrorEvent[] = [];
      const owner = newOwner();
      app = await framework.start(owner, { store: failingStore(), onError: (event) => errors.push(event) });
      const response = await app.request(charge("key-1"));
      expect(response.status).toBe(503);
      expect(response.header("retry-after")).toBe("1");
      expect(problemOf(response).type).toBe("https://idemkey.dev/problems/store-unavailable");
      expect(owner.effects).toHaveLength(0);
      expect(errors.map((e) => [e.phase, e.key, (e.error as Error).message])).toEqual([
        ["claim", "key-1", "store is down"],
      ]);
    });

    it.each([
      ["empty", ""],
      ["empty sf-string", '""'],
      ["longer than 255 characters", "k".repeat(256)],
      ["not printable ASCII", "caf\u00e9"],
      ["a control character", "a\tb"],
      ["sent in two header fields", ["key-1", "key-2"]],
      ["an unterminated sf-string", '"abc'],
      ["an sf-string with parameters", '"abc";v=1'],
      ["a bad escape", '"a\\nb"'],
    ])("answers 400 to a malformed key: %s", async (_name, key) => {
      const { app, owner } = await start({ required: false });
      const response = await app.request(charge(key));
      expect(response.status).toBe(400);
      expect(problemOf(response).type).toBe("https://idemkey.dev/problems/key-invalid");
      expect(owner.effects).toHaveLength(0);
    });

    it("accepts a key of exactly 255 printable characters", async () => {
      const { app } = await start();
      expect((await app.request(charge("~".repeat(255)))).status).toBe(201);
    });

    it("answers outcome-unknown to a retry that takes over a key whose handler may have run, and never reruns it; the handler's response, saved late, settles the key and later retries replay it", async () => {
      const { app, owner, clock, errors, store } = await start({ leaseMs: 60_000 });
      const gate = hold(owner);
      const stuck = app.request(charge("key-1"));
      await gate.entered;
      clock.advance(59_999);
      expect((await app.request(charge("key-1"))).status).toBe(409);
      clock.advance(1);
      const takeover = await app.request(charge("key-1"));
      expect(takeover.status).toBe(409);
      expect(problemOf(takeover).type).toBe("https://idemkey.dev/problems/outcome-unknown");
      gate.open();
      const first = await stuck;
      expect(first.status).toBe(201);
      expect(owner.effects).toHaveLength(1);
      // The first request lost its claim to the takeover, but the taker kept its token: its response lands late,
      // fenced on that token, and settles the unknown outcome. Only the takeover is reported.
      expect(errors.map((e) => [e.phase, (e.error as Error).constructor.name])).toEqual([
        ["claim", "OutcomeUnknownError"],
      ]);
      const later = await app.request(charge("key-1"));
      expect(later.status).toBe(201);
      expect(later.header("idempotent-replayed")).toBe("true");
      expect(later.body).toBe(first.body);
      expect(owner.effects).toHaveLength(1);
      // The inspector's audit trail of the key says what happened.
      const { keys } = await listKeys(store, asIs, {}, 0, 10, 100);
      expect(keys).toHaveLength(1);
      expect(keys[0]).toMatchObject({ kind: "http", state: "completed" });
      expect(keys[0]!.events?.map((e) => [e.type, "how" in e ? e.how : undefined])).toEqual([
        ["taken_over", undefined],
        ["resolved", "late_completion"],
      ]);
    });

    it(`settles a key taken over from a handler that threw as it would have without the takeover: ${framework.seesThrows ? "it stays outcome-unknown (nothing vouches for what it did)" : "the error answer lands late and is replayed"}`, async () => {
      const { app, owner, clock } = await start({ leaseMs: 60_000 });
      owner.throwAfterEffect = 1;
      const gate = hold(owner);
      const stuck = app.request(charge("key-1"));
      await gate.entered;
      clock.advance(60_000);
      expect(problemOf(await app.request(charge("key-1"))).type).toBe(
        "https://idemkey.dev/problems/outcome-unknown",
      );
      gate.open();
      const failed = await stuck;
      expect(failed.status).toBe(500);
      const later = await app.request(charge("key-1"));
      if (framework.seesThrows) {
        expect(problemOf(later).type).toBe("https://idemkey.dev/problems/outcome-unknown");
      } else {
        // Express shows middleware only what the error handler sent: an answer, saved (late) like any other.
        expect(later.status).toBe(500);
        expect(later.header("idempotent-replayed")).toBe("true");
        expect(later.body).toBe(failed.body);
      }
      expect(owner.effects).toHaveLength(1);
    });

    it("with rerunAfterTakeover, lets a retry take over a key whose lease ran out and run it again", async () => {
      const { app, owner, clock, errors } = await start({ leaseMs: 60_000, rerunAfterTakeover: true });
      const gate = hold(owner);
      const stuck = app.request(charge("key-1"));
      await gate.entered;
      clock.advance(60_000);
      const takeover = await app.request(charge("key-1"));
      expect(takeover.status).toBe(201);
      gate.open();
      expect((await stuck).status).toBe(201);
      expect(owner.effects).toHaveLength(2);
      expect(errors.map((e) => [e.phase, e.error instanceof LeaseLostError])).toEqual([["save", true]]);
      expect((await app.request(charge("key-1"))).body).toBe(takeover.body);
    });

    it("retries a failed save while the store is down, so the retry replays instead of running again", async () => {
      let failures = 0;
      const { app, owner, errors } = await start({
        wrap: (inner) => {
          const flaky = flakyStore(inner);
          flaky.failWhen((method, args) => isCompletion(method, args) && failures++ < 3);
          return flaky.store;
        },
      });
      const first = await app.request(charge("key-1"));
      expect(first.status).toBe(201);
      // The save goes on in the background after the first failure: wait for its replay, as a client's retry would.
      let retry = await app.request(charge("key-1"));
      for (let i = 0; i < 200 && retry.status === 409; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        retry = await app.request(charge("key-1"));
      }
      expect(retry.status).toBe(201);
      expect(retry.header("idempotent-replayed")).toBe("true");
      expect(retry.body).toBe(first.body);
      expect(owner.effects).toHaveLength(1);
      expect(failures).toBeGreaterThan(3);
      expect(errors).toEqual([]);
    });

    it("a save applied whose reply was lost: its retry finds it applied, reports nothing and the retry replays", async () => {
      let lost = 0;
      const { app, owner, errors } = await start({
        // The server applies the first completion and the connection drops before its reply (as in a failover).
        wrap: (inner) => ({
          ...inner,
          async update(...args: Parameters<Store["update"]>) {
            const applied = await inner.update(...args);
            if (isCompletion("update", args) && lost++ === 0) {
              throw new StoreError(
                "lossy",
                "update",
                args[0],
                "lossy store: update failed: connection reset",
              );
            }
            return applied;
          },
        }),
      });
      const first = await app.request(charge("key-1"));
      expect(first.status).toBe(201);
      // The save's second try runs in the background after the first failed: wait for it, then retry as a client would.
      for (let i = 0; i < 500 && lost < 2; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const retry = await app.request(charge("key-1"));
      expect(lost).toBe(2);
      expect(retry.status).toBe(201);
      expect(retry.header("idempotent-replayed")).toBe("true");
      expect(owner.effects).toHaveLength(1);
      expect(errors).toEqual([]);
    });

    it("sends a response over maxResponseBytes but does not save it; retries get a 500 problem, not a rerun", async () => {
      const { app, owner, errors } = await start({ maxResponseBytes: 2_000 });
      owner.padTo = 5_000;
      const first = await app.request(charge("key-1"));
      expect(first.status).toBe(201);
      expect(first.body.length).toBeGreaterThan(5_000);
      const retry = await app.request(charge("key-1"));
      expect(retry.status).toBe(500);
      expect(retry.header("idempotent-replayed")).toBe("true");
      expect(problemOf(retry).type).toBe("https://idemkey.dev/problems/response-not-saved");
      expect(owner.effects).toHaveLength(1);
      expect(errors).toHaveLength(1);
      expect(errors[0]!.error).toBeInstanceOf(ResponseTooLargeError);
      owner.padTo = 1_000;
      expect((await app.request(charge("key-2"))).status).toBe(201);
      expect((await app.request(charge("key-2"))).header("idempotent-replayed")).toBe("true");
    });

    it("leaves methods that are not covered alone, and covers those configured", async () => {
      const { app, owner } = await start({ methods: ["PUT"] });
      expect((await app.request(charge(undefined))).status).toBe(201);
      expect((await app.request(charge(undefined))).status).toBe(201);
      expect(owner.effects).toHaveLength(2);
    });
  });
}
