import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DefaultRequestHandler, InMemoryTaskStore, ServerCallContext } from "@a2a-js/sdk/server";
import { describe, expect, it } from "vitest";
import {
  IDEMPOTENCY_KEY_METADATA,
  idempotentExecutor,
  keyedMessage,
  messageIdFor,
} from "../../src/a2a/index.js";
import { memoryStore } from "../../src/store/memory.js";
import { agentCard, bookingExecutor } from "./fixtures/booking-agent.js";

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

/** docs/integrations/a2a.md, "Wire format", written again from the page's words alone. */
function documentedMessageId(key: string): string {
  const hex = [...sha256(`dev.idemkey/message-id\n${key}`).slice(0, 32)];
  hex[12] = "8";
  hex[16] = ((Number.parseInt(hex[16] as string, 16) & 0b11) | 0b1000).toString(16);
  const h = hex.join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

describe("idemkey/a2a's wire format, as documented", () => {
  it("a keyed message carries the key in its metadata and a version-8 UUID derived from it as its id", () => {
    for (const key of ["a".repeat(64), "order-1", sha256("x")]) {
      const message = keyedMessage(key, { text: "hi", metadata: { trace: "t-1" } });
      expect(message.metadata).toEqual({ trace: "t-1", [IDEMPOTENCY_KEY_METADATA]: key });
      expect(message.messageId).toBe(documentedMessageId(key));
      expect(messageIdFor(key)).toBe(message.messageId);
      expect(message.messageId).toMatch(
        /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      );
    }
    expect(IDEMPOTENCY_KEY_METADATA).toBe("dev.idemkey/idempotency-key");
  });

  it("the agent's record lives under a2a:<sha256 of JSON [scope, key]>, scope the tenant and user", async () => {
    const store = memoryStore();
    const dir = mkdtempSync(join(tmpdir(), "idemkey-a2a-wire-"));
    const effects = join(dir, "bookings.log");
    const executor = idempotentExecutor(bookingExecutor(effects), { store });
    const handler = new DefaultRequestHandler(
      agentCard("http://127.0.0.1/a2a"),
      new InMemoryTaskStore(),
      executor,
    );
    await handler.sendMessage(
      { message: keyedMessage("k-wire", { text: "hi" }) } as never,
      new ServerCallContext(),
    );
    const scope = JSON.stringify(["", ""]);
    expect((await store.list({ prefix: "a2a:" })).map((r) => [r.key, r.state])).toEqual([
      [`a2a:${sha256(JSON.stringify([scope, "k-wire"]))}`, "completed"],
    ]);
    rmSync(dir, { recursive: true, force: true });
  });
});
