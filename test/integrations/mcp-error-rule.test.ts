import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client as ClientV2, InMemoryTransport as MemoryV2 } from "@modelcontextprotocol/client";
import { StdioClientTransport as StdioV2 } from "@modelcontextprotocol/client/stdio";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport as StdioV1 } from "@modelcontextprotocol/sdk/client/stdio.js";
import { InMemoryTransport as MemoryV1 } from "@modelcontextprotocol/sdk/inMemory.js";
import { afterAll, describe, expect, it } from "vitest";
import {
  createHarness,
  ErrorAnswer,
  type HarnessEvent,
  isErrorAnswer,
  memoryStore,
  OutcomeUnknownError,
} from "../../src/index.js";
import {
  type McpListClient,
  McpToolError,
  mcpTool,
  mcpTools,
  NO_EFFECT_META,
  REFUSAL_META,
} from "../../src/mcp/index.js";
import { type Account, mailServerV1, mailServerV2 } from "./fixtures/mcp-mail-server.js";
import { readEffects } from "./fixtures/mcp-server.js";

// Case 1 of issue #28, MCP part: both SDK lines turn a handler that throws into an isError result, so an error
// result says nothing about the effect unless someone who knows marks it (docs/integration-contract.md). Effects are
// counted from the file the fake owner writes; calls that reached the server are counted at the client's transport.
const dir = mkdtempSync(join(tmpdir(), "idemkey-mcp-rule-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const effectsFile = () => join(dir, `effects-${++files}.jsonl`);
const fastRetries = { minDelayMs: 1, maxDelayMs: 5, jitter: false };

type Line = "v1" | "v2";

async function connect(line: Line, file: string, account: Account = { cents: 0 }) {
  const store = memoryStore();
  const [clientSide, serverSide] = line === "v1" ? MemoryV1.createLinkedPair() : MemoryV2.createLinkedPair();
  const calls: string[] = [];
  const send = clientSide.send.bind(clientSide);
  clientSide.send = ((message: { method?: string; params?: { name?: string } }, ...rest: never[]) => {
    if (message.method === "tools/call") calls.push(String(message.params?.name));
    return (send as (...a: unknown[]) => Promise<void>)(message, ...rest);
  }) as typeof clientSide.send;
  if (line === "v1") await mailServerV1(store, file, account).connect(serverSide as MemoryV1);
  else await mailServerV2(store, file, account).connect(serverSide as MemoryV2);
  const client =
    line === "v1"
      ? new ClientV1({ name: "agent", version: "1.0.0" })
      : new ClientV2({ name: "agent", version: "1.0.0" });
  await (client.connect as (t: unknown) => Promise<void>)(clientSide);
  const sent = (tool: string) => calls.filter((c) => c === tool).length;
  return { client: client as McpListClient, sent, close: () => client.close() };
}

const caught = (promise: Promise<unknown>) => promise.catch((error: unknown) => error);

describe.each(["v1", "v2"] as const)("an error result on the %s SDK", (line) => {
  it("(a) unguarded, no dedupe: a handler that sent and then threw is an unknown outcome, never sent again", async () => {
    const file = effectsFile();
    const mail = await connect(line, file);
    try {
      const harness = createHarness({ retry: fastRetries });
      const tool = mcpTool(mail.client, { name: "send_email", effect: "unguarded" });
      const args = { to: "ana@example.com" };
      const first = await caught(harness.call("thread-1", tool, args));
      expect(first).toBeInstanceOf(OutcomeUnknownError);
      // The server's words stay reachable: the unknown outcome's cause is the error answer, not a marked one.
      const cause = (first as OutcomeUnknownError).cause as McpToolError;
      expect(cause).toBeInstanceOf(McpToolError);
      expect(cause.noEffect).toBeUndefined();
      expect(cause.message).toMatch(/SMTP connection reset/);
      // A node retry policy runs the same call again, twice: the key is locked, nothing reaches the server.
      for (let retry = 0; retry < 2; retry++) {
        expect(await caught(harness.call("thread-1", tool, args))).toBeInstanceOf(OutcomeUnknownError);
      }
      expect(mail.sent("send_email")).toBe(1);
      expect(readEffects(file)).toHaveLength(1);
    } finally {
      await mail.close();
    }
  });

  it("(b) keyed + mcpDedupe: the client's retries and a repeated call are refused as outcome_unknown: one effect", async () => {
    const file = effectsFile();
    const mail = await connect(line, file);
    try {
      const events: HarnessEvent[] = [];
      // Retries forced on every failure, as an eager policy would: each reaches the server with the same key.
      const harness = createHarness({
        retry: { ...fastRetries, retries: 2, shouldRetry: () => true },
        onEvent: (e) => events.push(e),
      });
      const tool = mcpTool(mail.client, { name: "send_email_deduped", effect: "keyed" });
      const args = { to: "ana@example.com" };
      const error = await caught(harness.call("thread-2", tool, args));
      expect(error).toBeInstanceOf(OutcomeUnknownError);
      const retried = events.filter((e) => e.type === "retried") as Extract<
        HarnessEvent,
        { type: "retried" }
      >[];
      // Even the first answer is mcpDedupe's outcome_unknown refusal: the server knows its handler threw, and says
      // so rather than let the SDK turn the throw into an error result that says nothing of the effect.
      expect(retried[0]?.error).toBeInstanceOf(OutcomeUnknownError);
      expect(mail.sent("send_email_deduped")).toBe(3);

      // Another agent process (its ledger gone) repeats the call: the server still refuses it.
      const again = await caught(createHarness().call("thread-2", tool, args));
      expect(again).toBeInstanceOf(OutcomeUnknownError);
      expect(readEffects(file)).toHaveLength(1);
    } finally {
      await mail.close();
    }
  });

  it.each(["unguarded", "keyed"] as const)(
    "(c) a payment refused with noEffect is released at both ends (%s client); the identical call pays later, once",
    async (effect) => {
      const file = effectsFile();
      const account = { cents: 0 };
      const mail = await connect(line, file, account);
      try {
        const harness = createHarness({ retry: fastRetries });
        const tool = mcpTool(mail.client, { name: "pay", effect });
        const args = { cents: 500 };
        const refused = await caught(harness.call("order-7", tool, args));
        expect(refused).toBeInstanceOf(McpToolError);
        expect(refused).not.toBeInstanceOf(OutcomeUnknownError);
        const answer = (refused as McpToolError).result;
        expect(answer._meta?.[NO_EFFECT_META]).toBe(true);
        expect(answer._meta?.[REFUSAL_META]).toBeUndefined();
        expect((refused as McpToolError).noEffect).toBe(true);
        expect((refused as McpToolError).message).toMatch(/insufficient funds/);
        expect(readEffects(file)).toHaveLength(0);

        account.cents = 800;
        const paid = await harness.call("order-7", tool, args);
        expect(paid.content).toEqual([{ type: "text", text: "paid 500" }]);
        // A restarted agent repeats it: replayed by the server, not paid again.
        await createHarness().call("order-7", tool, args);
        expect(readEffects(file)).toHaveLength(1);
        expect(account.cents).toBe(300);
      } finally {
        await mail.close();
      }
    },
  );

  it("(d) a classifier the tool declares releases a validation error of an unguarded tool; without it, unknown", async () => {
    const mail = await connect(line, effectsFile());
    try {
      const seen: unknown[] = [];
      const validation = (error: unknown) => {
        seen.push(error);
        return (
          error instanceof McpToolError && /Validation failed/.test(String(error.result.content[0]?.text))
        );
      };
      const harness = createHarness({ retry: fastRetries });
      const args = { email: "not-an-address" };
      const classified = mcpTool(mail.client, {
        name: "create_user",
        effect: "unguarded",
        noEffect: validation,
      });
      for (let round = 0; round < 2; round++) {
        const error = await caught(harness.call("signup-1", classified, args));
        expect(error).toBeInstanceOf(McpToolError);
      }
      // Released both times: the identical call reached the server again.
      expect(mail.sent("create_user")).toBe(2);
      const asked = seen[0] as McpToolError;
      expect(isErrorAnswer(asked)).toBe(true);
      expect(asked).toBeInstanceOf(ErrorAnswer);
      expect(asked.answer).toBe(asked.result);
      expect(asked.answer.isError).toBe(true);
      expect(asked.tool).toBe("create_user");

      // mcpTools applies one classifier to every tool it lists.
      const listed = await mcpTools(mail.client, { noEffect: validation });
      expect(await caught(harness.call("signup-2", listed.create_user!.tool, args))).toBeInstanceOf(
        McpToolError,
      );
      expect(mail.sent("create_user")).toBe(3);

      // The same error with no one to vouch for it: unknown, and the key stays locked.
      const plain = await mcpTools(mail.client);
      expect(await caught(harness.call("signup-3", plain.create_user!.tool, args))).toBeInstanceOf(
        OutcomeUnknownError,
      );
      expect(await caught(harness.call("signup-3", plain.create_user!.tool, args))).toBeInstanceOf(
        OutcomeUnknownError,
      );
      expect(mail.sent("create_user")).toBe(4);
    } finally {
      await mail.close();
    }
  });
});

describe.each(["v1", "v2"] as const)(
  "over stdio, the %s server in a child process on a SQLite store",
  (line) => {
    const script = fileURLToPath(new URL("./fixtures/mcp-stdio-mail-server.ts", import.meta.url));
    async function start(db: string, effects: string) {
      const params = {
        command: process.execPath,
        args: ["--import", "tsx", script, line, db, effects],
        env: process.env as Record<string, string>,
        stderr: "inherit" as const,
      };
      const client =
        line === "v1"
          ? new ClientV1({ name: "agent", version: "1.0.0" })
          : new ClientV2({ name: "agent", version: "1.0.0" });
      await (client.connect as (t: unknown) => Promise<void>)(
        line === "v1" ? new StdioV1(params) : new StdioV2(params),
      );
      return client as McpListClient & { close(): Promise<void> };
    }

    it("a call that sent and then threw is refused after both processes restart: one effect", async () => {
      const db = join(dir, `stdio-${line}.db`);
      const file = effectsFile();
      const args = { to: "ana@example.com" };
      const one = await start(db, file);
      const first = await caught(
        createHarness().call("thread-9", mcpTool(one, { name: "send_email_deduped", effect: "keyed" }), args),
      );
      await one.close();
      // The first answer is already the server's outcome_unknown refusal; the keyed client released its own record.
      expect(first).toBeInstanceOf(OutcomeUnknownError);

      // A new agent (its memory ledger gone) and a new server process on the same SQLite file repeat the call.
      const two = await start(db, file);
      const again = await caught(
        createHarness().call("thread-9", mcpTool(two, { name: "send_email_deduped", effect: "keyed" }), args),
      );
      await two.close();
      expect(again).toBeInstanceOf(OutcomeUnknownError);
      expect(readEffects(file)).toHaveLength(1);
    });
  },
);
