import { createHash, createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  hashImplementation,
  hmacSha256Hex,
  pureHmacSha256Hex,
  pureSha256Hex,
  sha256Hex,
  sha256PartsHex,
} from "../../src/key/hash.js";
import { canonicalCall, idempotencyKey } from "../../src/key/index.js";

/**
 * The pure-JS SHA-256 and HMAC-SHA-256 (src/key/sha256.ts) against the published vectors, each also checked against
 * node:crypto so that a mistyped expectation cannot pass, then against node:crypto on random inputs.
 */
const bytes = (length: number, byte: number) => new Uint8Array(length).fill(byte);
const nodeSha = (data: string | Uint8Array) => createHash("sha256").update(data).digest("hex");
const nodeHmac = (key: string | Uint8Array, data: string | Uint8Array) =>
  createHmac("sha256", key).update(data).digest("hex");

describe("SHA-256, FIPS 180-4 examples (NIST CSRC)", () => {
  const cases: [string, string, string][] = [
    ["empty", "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"],
    ["abc", "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"],
    [
      "448 bits",
      "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
    ],
    [
      "896 bits",
      "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
      "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1",
    ],
    [
      "one million a",
      "a".repeat(1_000_000),
      "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
    ],
  ];
  it.each(cases)("%s", (_, message, digest) => {
    expect(nodeSha(message)).toBe(digest);
    expect(pureSha256Hex(message)).toBe(digest);
    expect(pureSha256Hex(new TextEncoder().encode(message))).toBe(digest);
  });
});

describe("HMAC-SHA-256, RFC 4231 test cases", () => {
  const range = Uint8Array.from({ length: 25 }, (_, i) => i + 1);
  const cases: [string, Uint8Array | string, Uint8Array | string, string][] = [
    ["1", bytes(20, 0x0b), "Hi There", "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"],
    [
      "2",
      "Jefe",
      "what do ya want for nothing?",
      "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
    ],
    [
      "3",
      bytes(20, 0xaa),
      bytes(50, 0xdd),
      "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe",
    ],
    ["4", range, bytes(50, 0xcd), "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"],
    [
      "6 (key longer than a block)",
      bytes(131, 0xaa),
      "Test Using Larger Than Block-Size Key - Hash Key First",
      "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
    ],
    [
      "7 (key and data longer than a block)",
      bytes(131, 0xaa),
      "This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.",
      "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
    ],
  ];
  it.each(cases)("test case %s", (_, key, data, mac) => {
    expect(nodeHmac(key, data)).toBe(mac);
    expect(pureHmacSha256Hex(key, data)).toBe(mac);
  });

  it("test case 5, truncated to 128 bits", () => {
    const mac = pureHmacSha256Hex(bytes(20, 0x0c), "Test With Truncation");
    expect(mac.slice(0, 32)).toBe("a3b6167473100ee06e0c796c2955552b");
  });
});

interface Vector {
  taskId: string;
  tool: string;
  args: unknown;
  step?: string | number;
  canonical: string;
  key: string;
}
const vectors: Vector[] = JSON.parse(
  readFileSync(new URL("../../test-vectors/keys.json", import.meta.url), "utf8"),
);

describe("test-vectors/keys.json through both paths", () => {
  it("uses node:crypto under Node", () => {
    expect(hashImplementation).toBe("node:crypto");
  });

  it.each(vectors.map((vector) => [vector.canonical, vector] as const))("%s", (_, vector) => {
    const options = vector.step === undefined ? undefined : { step: vector.step };
    expect(canonicalCall(vector.taskId, vector.tool, vector.args, options)).toBe(vector.canonical);
    expect(idempotencyKey(vector.taskId, vector.tool, vector.args, options)).toBe(vector.key);
    expect(pureSha256Hex(vector.canonical)).toBe(vector.key);
    expect(sha256Hex(vector.canonical)).toBe(vector.key);
    // The keyed form too: the same HMAC whichever path made it.
    const secret = "a shared fleet secret, 32 bytes!";
    expect(pureHmacSha256Hex(secret, vector.canonical)).toBe(nodeHmac(secret, vector.canonical));
    expect(idempotencyKey(vector.taskId, vector.tool, vector.args, { ...options, secret })).toBe(
      nodeHmac(secret, vector.canonical),
    );
  });
});

describe("pure-JS against node:crypto on random inputs", () => {
  // Lengths around the padding's edges: 55 bytes fit one final block, 56 need two; 64 is one block exactly.
  const edge = fc.oneof(
    fc.integer({ min: 0, max: 200 }),
    fc.constantFrom(55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129),
  );
  const byteStrings = edge.chain((length) => fc.uint8Array({ minLength: length, maxLength: length }));

  it("SHA-256 of random bytes", () => {
    fc.assert(
      fc.property(byteStrings, (data) => pureSha256Hex(data) === nodeSha(data)),
      { numRuns: 2000 },
    );
  });

  it("SHA-256 of random strings with multibyte UTF-8 (2, 3 and 4 bytes a code point)", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "binary", maxLength: 80 }),
        (text) => pureSha256Hex(text) === nodeSha(text),
      ),
      { numRuns: 2000 },
    );
  });

  it("HMAC-SHA-256 with random keys (shorter and longer than a block) and data", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 0, maxLength: 150 }),
        byteStrings,
        (key, data) =>
          pureHmacSha256Hex(key, data) === nodeHmac(key, data) &&
          hmacSha256Hex(key, data) === nodeHmac(key, data),
      ),
      { numRuns: 1000 },
    );
  });

  it("the parts of a fingerprint hash as if joined", () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.string({ unit: "binary" }), fc.uint8Array())), (parts) => {
        const digest = createHash("sha256");
        for (const part of parts) digest.update(part);
        return sha256PartsHex(parts) === digest.digest("hex");
      }),
    );
  });
});
