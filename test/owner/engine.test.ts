import { describe, expect, it, vi } from "vitest";
import { idempotencyEngine, storeKey } from "../../src/owner/engine.js";
import { requestFingerprint } from "../../src/owner/fingerprint.js";
import { parseKeyHeader } from "../../src/owner/key-header.js";
import { type IdempotencyOptions, resolveOptions, Settle, settle } from "../../src/owner/options.js";
import { decodeSaved, encodeNotSaved, encodeSaved } from "../../src/owner/saved-response.js";
import { memoryStore } from "../../src/store/memory.js";

const bytes = (text: string) => ({ bytes: new TextEncoder().encode(text) });

describe("parseKeyHeader", () => {
  it.each([
    [["abc"], "abc"],
    [['"abc"'], "abc"],
    [[' "a b" '], "a b"],
    [['"a\\"b\\\\c"'], 'a"b\\c'],
    [['a"b'], 'a"b'],
    [["x".repeat(255)], "x".repeat(255)],
    [['"a,b"'], "a,b"],
  ])("reads %j as %j", (fields, key) => {
    expect(parseKeyHeader(fields)).toEqual({ ok: true, key });
  });

  it.each([
    [[""], /empty/],
    [['""'], /empty/],
    [["x".repeat(256)], /256 characters/],
    [["a", "b"], /more than once/],
    [["a, b"], /comma/],
    [['"a", "b"'], /more than once/],
    [['"abc'], /closing quote/],
    [['"abc";p=1'], /parameters/],
    [['"a\\b"'], /backslash/],
    [["caf\u00e9"], /printable ASCII at position 3/],
    [["a\u0001"], /printable ASCII/],
  ])("refuses %j", (fields, detail) => {
    const parsed = parseKeyHeader(fields);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) {
      expect(parsed.reason).toBe("invalid");
      expect(parsed.detail).toMatch(detail);
    }
  });

  it("tells a missing key from an invalid one", () => {
    expect(parseKeyHeader(undefined)).toMatchObject({ ok: false, reason: "missing" });
    expect(parseKeyHeader([])).toMatchObject({ ok: false, reason: "missing" });
  });
});

describe("requestFingerprint", () => {
  const json = "application/json";
  const fp = (...args: Parameters<typeof requestFingerprint>) => {
    const result = requestFingerprint(...args);
    if (!("fingerprint" in result)) throw new Error(`refused: ${result.refused.refused}`);
    return result.fingerprint;
  };
  const refusal = (text: string) => {
    const result = requestFingerprint("POST", "/c", json, bytes(text));
    return "refused" in result ? result.refused : undefined;
  };

  it("gives the fingerprints the stores already hold: pinned vectors, so a rewrite cannot turn a retry into a conflict", () => {
    // Computed by the field-by-field framing this was first written with; records in stores carry these.
    const vectors: [Parameters<typeof requestFingerprint>, string][] = [
      [
        ["POST", "/charges?x=1", json, bytes('{"amount":1999,"currency":"eur"}')],
        "9847f79c98f003e8c462a59aa0a3c56df3889fd077890f7de8d76be43eeba407",
      ],
      [
        ["post", "/\u00fc/\u00e9", json, { parsed: { b: "\u00fcn\u00ef\u260e", a: [1, 2.5] } }],
        "2f20891efa2efc17affdb7536c2d8093b468ab878d3840d7634c740966fad662",
      ],
      [
        ["PUT", "/raw", "text/plain", bytes("h\u00e9llo\u0000world")],
        "7ae4cc56b92f53f8b9fa1dc6cb49ee2bb0629111207a597308cf9a2467778ee6",
      ],
      [
        ["POST", "/bin", "application/octet-stream", { bytes: new Uint8Array([0, 255, 10, 13]) }],
        "b9784e526d5c960ef874463275f8444115d7377152cdcec062e33739797e13e8",
      ],
      [
        ["POST", "/empty", json, { bytes: new Uint8Array() }],
        "773755737b7609d63491b9d55d118144ee60bb368e0e9b1e3b24fa7a315e30cf",
      ],
      [
        ["PATCH", "/s", undefined, { parsed: "a string body" }],
        "3f5d1fdfe4a6709518b65e9dd6d4e3a90ff5b9f7a78012fb41847896ffc46965",
      ],
      [
        ["POST", "/lone\ud800", "text/plain", bytes("x")],
        "6fb391111fe9ce870d68aa0d6603d48326e7c1edf519057e74c80afc6330d036",
      ],
    ];
    for (const [args, expected] of vectors) expect(fp(...args)).toBe(expected);
  });

  it("keeps every distinct JSON value distinct: large integers, long decimals, exponents", () => {
    const pairs = [
      ['{"account":9007199254740993}', '{"account":9007199254740992}'],
      ["[0.1000000000000000055511151231257827]", "[0.1]"],
      ["[1e400]", "[2e400]"],
      ["[123456789012345678901234567890]", "[123456789012345678901234567891]"],
    ];
    for (const [x, y] of pairs)
      expect(fp("POST", "/c", json, bytes(x!))).not.toBe(fp("POST", "/c", json, bytes(y!)));
    // Equal values in other spellings stay equal.
    for (const same of ["[1]", "[1.0]", "[10e-1]", "[0.1e1]", "[1E+0]"]) {
      expect(fp("POST", "/c", json, bytes(same))).toBe(fp("POST", "/c", json, bytes("[1]")));
    }
    expect(fp("POST", "/c", json, bytes("[-0]"))).toBe(fp("POST", "/c", json, bytes("[0]")));
    expect(fp("POST", "/c", json, bytes(String.raw`{"\u0061":1}`))).toBe(
      fp("POST", "/c", json, bytes('{"a":1}')),
    );
  });

  it("refuses what has no one value: duplicate member names, lone surrogates, nesting past the limit", () => {
    expect(refusal('{"a":1,"a":2}')).toMatchObject({
      refused: expect.stringMatching(/"a" appears twice/),
      path: "",
    });
    expect(refusal(String.raw`{"x":{"a":1,"\u0061":1}}`)).toMatchObject({ path: "/x" });
    expect(refusal(String.raw`{"a":"\ud800"}`)).toMatchObject({
      refused: expect.stringMatching(/lone surrogate/),
      path: "/a",
    });
    expect(refusal(`${"[".repeat(5000)}${"]".repeat(5000)}`)).toMatchObject({
      refused: expect.stringMatching(/deeper/),
    });
    expect(
      requestFingerprint("POST", "/c", json, { parsed: { a: String.fromCharCode(0xd800) } }),
    ).toHaveProperty("refused");
    let deep: unknown = [];
    for (let i = 0; i < 5000; i++) deep = [deep];
    expect(requestFingerprint("POST", "/c", json, { parsed: deep })).toHaveProperty("refused");
  });

  it("hashes a JSON body in canonical form, so member order and whitespace do not matter", () => {
    const a = fp("POST", "/c", json, bytes('{"a":1,"b":[1,2]}'));
    expect(fp("post", "/c", "application/json; charset=utf-8", bytes('{ "b": [1, 2], "a": 1.0 }'))).toBe(a);
    expect(fp("POST", "/c", "application/vnd.api+json", bytes('{"b":[1,2],"a":1}'))).toBe(a);
    expect(fp("POST", "/c", json, { parsed: { b: [1, 2], a: 1 } })).toBe(a);
    expect(fp("POST", "/c", json, bytes('{"a":1,"b":[2,1]}'))).not.toBe(a);
  });

  it("hashes any other body as raw bytes, and refuses a JSON content type that is not JSON", () => {
    const text = fp("POST", "/c", "text/plain", bytes('{"a":1}'));
    expect(text).not.toBe(fp("POST", "/c", "text/plain", bytes('{ "a":1}')));
    expect(requestFingerprint("POST", "/c", json, bytes("{not json"))).toMatchObject({
      refused: { refused: expect.stringMatching(/not JSON/) },
    });
    expect(
      requestFingerprint("POST", "/c", json, { bytes: new Uint8Array([0x22, 0xff, 0x22]) }),
    ).toHaveProperty("refused");
    expect(fp("POST", "/c", undefined, { parsed: Buffer.from("raw") })).toBe(
      fp("POST", "/c", undefined, bytes("raw")),
    );
  });

  it("tells apart method, target and body however their bytes could be split", () => {
    const prints = new Set([
      fp("POST", "/c", "text/plain", bytes("x")),
      fp("PATCH", "/c", "text/plain", bytes("x")),
      fp("POST", "/cx", "text/plain", bytes("")),
      fp("POST", "/c?x", "text/plain", bytes("")),
      fp("POST", "/c", "text/plain", bytes("")),
      fp("POST", "/c", json, bytes('"x"')),
      fp("POST", "/c", "text/plain", bytes('"x"')),
    ]);
    expect(prints.size).toBe(7);
  });
});

describe("saved responses", () => {
  it("keeps UTF-8 bodies as text and other bytes as base64, exactly", () => {
    for (const body of [new TextEncoder().encode('\ufeff{"é":1}'), new Uint8Array([0xff, 0x00, 0xfe])]) {
      const text = encodeSaved({ status: 201, headers: [["location", "/x"]], body });
      const decoded = decodeSaved(text);
      expect(decoded).toEqual({
        saved: true,
        response: { status: 201, headers: [["location", "/x"]], body },
      });
    }
    expect(JSON.parse(encodeSaved({ status: 200, headers: [], body: new Uint8Array([0xff]) })).encoding).toBe(
      "base64",
    );
    expect(decodeSaved(encodeNotSaved(201, "too_large"))).toEqual({
      saved: false,
      status: 201,
      reason: "too_large",
    });
    expect(() => decodeSaved('{"v":9}')).toThrow(/format/);
  });
});

describe("options", () => {
  const store = memoryStore();

  it.each([
    [{}, /options\.store/],
    [{ store: {} }, /options\.store/],
    [{ store, scope: "account" }, /options\.scope/],
    [{ store }, /options\.scope is required/],
    [{ store, scope: "single-tenant", methods: [] }, /options\.methods/],
    [{ store, scope: "single-tenant", methods: ["PO ST"] }, /options\.methods\[0\]/],
    [{ store, scope: "single-tenant", required: "yes" }, /options\.required/],
    [{ store, scope: "single-tenant", leaseMs: 0 }, /options\.leaseMs/],
    [{ store, scope: "single-tenant", retentionMs: 1.5 }, /options\.retentionMs/],
    [{ store, scope: "single-tenant", maxResponseBytes: -1 }, /options\.maxResponseBytes/],
    [{ store, scope: "single-tenant", keepHeaders: ["x-ok", "bad header"] }, /options\.keepHeaders\[1\]/],
    [{ store, scope: "single-tenant", save: true }, /options\.save/],
    [{ store, scope: "single-tenant", retryAfterSeconds: 0 }, /options\.retryAfterSeconds/],
    [{ store, scope: "single-tenant", onError: "log" }, /options\.onError/],
    [{ store, scope: "single-tenant", maxBodyBytes: 0 }, /options\.maxBodyBytes/],
    [{ store, scope: "single-tenant", problemTypeBase: "errors/" }, /options\.problemTypeBase/],
    [{ store, scope: "single-tenant", docsUrl: "https://x.test/a b" }, /options\.docsUrl/],
  ])("refuses %j with a TypeError naming the option", (options, message) => {
    expect(() => idempotencyEngine(options as unknown as IdempotencyOptions<unknown>)).toThrow(TypeError);
    expect(() => idempotencyEngine(options as unknown as IdempotencyOptions<unknown>)).toThrow(message);
  });

  it("resolves defaults on a copy and never writes to the caller's object", () => {
    const methods = ["post", "put"];
    const options = Object.freeze({
      store,
      scope: "single-tenant" as const,
      methods: Object.freeze(methods),
      keepHeaders: Object.freeze(["X-Cost"]),
    });
    const resolved = resolveOptions(options);
    expect([...resolved.methods]).toEqual(["POST", "PUT"]);
    expect(resolved.keepHeaders.has("x-cost")).toBe(true);
    expect(resolved.keepHeaders.has("location")).toBe(true);
    expect(resolved).toMatchObject({ leaseMs: 30_000, retentionMs: 86_400_000, maxResponseBytes: 1_048_576 });
    expect(resolved.save({ status: 201, threw: false, noEffect: false })).toBeUndefined();
    expect(methods).toEqual(["post", "put"]);
  });

  it("settles a key by the one rule: an answer is saved, a throw is unknown, only the handler says no effect", () => {
    const outcome = (status: number, threw: boolean, noEffect = false) => ({ status, threw, noEffect });
    expect(settle(undefined, outcome(201, false))).toBe(Settle.save);
    expect(settle(undefined, outcome(500, false))).toBe(Settle.save);
    expect(settle(undefined, outcome(500, true))).toBe(Settle.unknown);
    expect(settle(undefined, outcome(409, true))).toBe(Settle.unknown);
    expect(settle(undefined, outcome(503, true, true))).toBe(Settle.release);
    expect(settle(undefined, outcome(503, false, true))).toBe(Settle.release);
    // What the `save` hook says wins.
    expect(settle(false, outcome(201, false))).toBe(Settle.release);
    expect(settle(true, outcome(500, true))).toBe(Settle.save);
  });
});

describe("the engine", () => {
  const request = (overrides: Record<string, unknown> = {}) => ({
    method: "POST",
    target: "/c",
    keyFields: ["k"],
    contentType: "application/json",
    body: () => bytes("{}"),
    request: {},
    ...overrides,
  });

  it("refuses a scope that does not return a string", async () => {
    const engine = idempotencyEngine({ store: memoryStore(), scope: () => 42 as unknown as string });
    await expect(engine.begin(request())).rejects.toThrow(/options\.scope must return a string/);
  });

  it("keys records by (scope, key) under http:, unambiguously", () => {
    expect(storeKey("a", "bc")).toMatch(/^http:[0-9a-f]{64}$/);
    expect(storeKey("a", "bc")).not.toBe(storeKey("ab", "c"));
    expect(storeKey("", "k")).toBe(storeKey("", "k"));
  });

  it("renews the lease of a running handler, and does not read the body of a request it does not cover", async () => {
    const store = memoryStore();
    const engine = idempotencyEngine({ store, scope: "single-tenant", leaseMs: 30 });
    let read = false;
    const body = () => {
      read = true;
      return bytes("");
    };
    expect(await engine.begin(request({ method: "GET", body }))).toEqual({ action: "pass" });
    expect(read).toBe(false);
    const decision = await engine.begin(request());
    if (decision.action !== "run") throw new Error(`expected run, got ${decision.action}`);
    const [record] = await store.list({ prefix: "http:" });
    const firstLease = record!.leaseUntil!;
    await vi.waitFor(
      async () => {
        const [renewed] = await store.list({ prefix: "http:" });
        expect(renewed!.leaseUntil!).toBeGreaterThan(firstLease);
      },
      { timeout: 10_000 },
    );
    await decision.lock.finish({ status: 201, headers: [], body: new Uint8Array(0), threw: false });
    expect((await store.list({ prefix: "http:" }))[0]).toMatchObject({
      state: "completed",
      leaseUntil: null,
    });
  });

  it("purges in batches of batchSize until a batch comes back short", async () => {
    const limits: number[] = [];
    let left = 7;
    const store = {
      ...memoryStore(),
      purge: async ({ limit = 1000 } = {}) => {
        limits.push(limit);
        const n = Math.min(limit, left);
        left -= n;
        return n;
      },
    };
    const engine = idempotencyEngine({ store, scope: "single-tenant" });
    expect(await engine.purge({ batchSize: 3 })).toBe(7);
    expect(limits).toEqual([3, 3, 3]);
    await expect(engine.purge({ batchSize: 0 })).rejects.toThrow(/options\.batchSize/);
  });
});
