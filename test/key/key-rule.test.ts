import { describe, expect, it } from "vitest";
import { idempotentFetch } from "../../src/fetch/index.js";
import { bareKeyProblem, KEY_RULE, keyProblem, MAX_KEY_LENGTH } from "../../src/key/key-rule.js";
import { idempotencyKeyOf } from "../../src/mcp/server/read-key.js";
import { parseKeyHeader } from "../../src/owner/key-header.js";

const META = "dev.idemkey/idempotency-key";
const hex = "ab".repeat(32);

/** What each transport makes of one key: accepted as itself, or refused. */
function seen(key: string) {
  const header = parseKeyHeader([`"${key.replace(/[\\"]/g, "\\$&")}"`]);
  let mcp: string | undefined;
  try {
    mcp = idempotencyKeyOf({ _meta: { [META]: key } });
  } catch {
    mcp = undefined;
  }
  return { quotedHeader: header.ok ? header.key : undefined, mcp };
}

describe("the key rule", () => {
  it("is 1 to 255 printable ASCII characters", () => {
    expect(MAX_KEY_LENGTH).toBe(255);
    expect(KEY_RULE).toBe("1 to 255 printable ASCII characters");
    expect(keyProblem(hex)).toBeUndefined();
    expect(keyProblem(" ~".repeat(127) + "!")).toBeUndefined();
    expect(keyProblem("")).toBe("is empty");
    expect(keyProblem("k".repeat(256))).toBe("is 256 characters long; the limit is 255");
    expect(keyProblem("caf\u00e9")).toBe("has a character that is not printable ASCII at position 3");
    expect(keyProblem("a\tb")).toMatch(/position 1/);
  });

  it("sent bare, also holds no space, quote, comma or backslash", () => {
    expect(bareKeyProblem(hex)).toBeUndefined();
    expect(bareKeyProblem("a1-B2_c3.~!#$%&'*+/:;<=>?@[]^`{|}")).toBeUndefined();
    expect(bareKeyProblem("two words")).toMatch(/a space at position 3/);
    for (const [key, at] of [
      ['quo"te', 3],
      ["com,ma", 3],
      ["back\\slash", 4],
    ] as const) {
      expect(bareKeyProblem(key)).toMatch(new RegExp(`at position ${at}, which a key sent bare`));
    }
    expect(bareKeyProblem("")).toBe("is empty");
  });

  it("is the one every transport applies: the quoted header takes every key, MCP the bare ones", () => {
    const keys = [
      hex,
      "a b",
      'a"b',
      "a,b",
      "a\\b",
      "~".repeat(255),
      "~".repeat(256),
      "",
      "caf\u00e9",
      "a\u0001",
    ];
    for (const key of keys) {
      const { quotedHeader, mcp } = seen(key);
      expect(quotedHeader, key).toBe(keyProblem(key) === undefined ? key : undefined);
      expect(mcp, key).toBe(bareKeyProblem(key) === undefined ? key : undefined);
    }
  });

  it("is what idempotentFetch checks before sending, quoted or bare", async () => {
    const sent: string[] = [];
    const { createIdempotentFetch } = await import("../../src/fetch/index.js");
    const fetch = async (_: unknown, init?: RequestInit) => {
      sent.push(new Headers(init?.headers).get("idempotency-key")!);
      return new Response("ok");
    };
    const quoted = createIdempotentFetch({ fetch });
    const bare = createIdempotentFetch({ fetch, quoted: false });
    await quoted("http://owner.test/", {}, { idempotencyKey: "a,b" });
    await expect(bare("http://owner.test/", {}, { idempotencyKey: "a,b" })).rejects.toThrow(
      /ctx\.idempotencyKey has , at position 1/,
    );
    await expect(
      idempotentFetch("http://owner.test/", {}, { idempotencyKey: "k".repeat(256) }),
    ).rejects.toThrow(/ctx\.idempotencyKey is 256 characters long; the limit is 255/);
    await bare("http://owner.test/", {}, { idempotencyKey: hex });
    expect(sent).toEqual(['"a,b"', hex]);
  });
});
