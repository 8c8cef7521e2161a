import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSdkMcpServer, tool } from "@anthropic-ai/claude-agent-sdk";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { z as z3 } from "zod/v3";
import { idemkeyContext, idempotentSdkTool } from "../../src/claude-agent-sdk/index.js";
import { createHarness, defaultModelTexts, idempotencyKey, isErrorAnswer } from "../../src/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { effectLog, effects } from "./fixtures/effect-log.js";

const dir = mkdtempSync(join(tmpdir(), "idemkey-claude-outcomes-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const file = (ext: string) => join(dir, `f-${++files}.${ext}`);

const SESSION = "0c6b3c9e-2d41-4a8e-9b7a-5e1f3d2c8a77";
const text = (value: string): CallToolResult => ({ content: [{ type: "text", text: value }] });
const texts = (result: unknown) =>
  (result as CallToolResult).content.map((part) => (part as { text: string }).text);

async function connect(tools: Parameters<typeof createSdkMcpServer>[0]["tools"]) {
  const server = createSdkMcpServer({ name: "billing", version: "1.0.0", tools });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.instance.connect(serverSide);
  const client = new Client({ name: "claude-code", version: "1.0.0" });
  await client.connect(clientSide);
  return client;
}

const PAYMENT = { invoice: "inv_7", cents: 2_500 };
const DECLINED: CallToolResult = { content: [{ type: "text", text: "insufficient funds" }], isError: true };

/** A payment tool that refuses while the account is short, and charges through the fake owner once it is not. */
function payTool(log: string, account: { funded: boolean }) {
  const owner = effectLog(log);
  return tool("pay", "Pay an invoice.", { invoice: z.string(), cents: z.number() }, async (args) => {
    if (!account.funded) return DECLINED;
    return text(owner.apply("charge", args, undefined));
  });
}

/** An email tool that sends through the fake owner and then fails: by an error answer, or by throwing. */
function emailTool(log: string, failure: "answer" | "throw") {
  const owner = effectLog(log);
  return tool("send_email", "Send an email.", { to: z.string(), body: z.string() }, async (args) => {
    owner.apply("email", args, undefined);
    if (failure === "throw") throw new Error("SMTP connection reset after DATA");
    return { content: [{ type: "text", text: "SMTP connection reset after DATA" }], isError: true };
  });
}

describe("idempotentSdkTool: an error answer follows the one rule", () => {
  it("a refused payment the classifier declares no-effect is handed back unchanged, and the call retried later charges once", async () => {
    const log = file("jsonl");
    const account = { funded: false };
    const harness = createHarness();
    const client = await connect([
      idempotentSdkTool(harness, payTool(log, account), {
        effect: "unguarded",
        taskId: SESSION,
        noEffect: (error) => isErrorAnswer(error) && texts(error.answer).includes("insufficient funds"),
      }),
    ]);
    expect(await client.callTool({ name: "pay", arguments: PAYMENT })).toEqual(DECLINED);
    account.funded = true;
    expect(await client.callTool({ name: "pay", arguments: PAYMENT })).toEqual(text("charge-1"));
    const again = await client.callTool({ name: "pay", arguments: PAYMENT });
    expect(texts(again).at(-1)).toBe("charge-1");
    expect(effects(log).map((e) => e.kind)).toEqual(["charge"]);
    await client.close();
  });

  for (const failure of ["answer", "throw"] as const) {
    it(`an email sent and then the tool ${failure === "answer" ? "answered an error" : "threw"}, with no classifier: never sent twice, and Claude reads the unknown-outcome text`, async () => {
      const log = file("jsonl");
      const harness = createHarness();
      const client = await connect([
        idempotentSdkTool(harness, emailTool(log, failure), { effect: "unguarded", taskId: SESSION }),
      ]);
      const args = { to: "ana@example.com", body: "Your refund is on its way." };
      const key = idempotencyKey(SESSION, "send_email", args);
      const unknown = defaultModelTexts.outcomeUnknown({
        tool: "send_email",
        key,
        reason: "unclassified_error",
        answer: "SMTP connection reset after DATA",
      });
      for (let attempt = 0; attempt < 3; attempt++) {
        const result = await client.callTool({ name: "send_email", arguments: args });
        expect(result).toEqual({ content: [{ type: "text", text: unknown }], isError: true });
      }
      expect(effects(log).map((e) => e.kind)).toEqual(["email"]);
      await client.close();
    });
  }
});

describe("idempotentSdkTool: what Claude reads when an error answer nobody classified puts a call on hold", () => {
  it("a payment answering isError 'insufficient funds' with no classifier: Claude reads the tool's own words and that the error is why the call is on hold, not that it was interrupted, on the first call and on a replay", async () => {
    const log = file("jsonl");
    const account = { funded: false };
    const client = await connect([
      idempotentSdkTool(createHarness(), payTool(log, account), { effect: "unguarded", taskId: SESSION }),
    ]);
    const key = idempotencyKey(SESSION, "pay", PAYMENT);
    const first = await client.callTool({ name: "pay", arguments: PAYMENT });
    account.funded = true;
    const again = await client.callTool({ name: "pay", arguments: PAYMENT });
    for (const result of [first, again]) {
      expect(result.isError).toBe(true);
      const [said] = texts(result);
      expect(said).toContain("insufficient funds");
      expect(said).toMatch(/answered[^.]*with an error/);
      expect(said).toContain(key);
      expect(said).not.toMatch(/interrupted/);
    }
    expect(effects(log), "the call on hold never ran again").toEqual([]);
    await client.close();
  });
});

describe("idempotentSdkTool: the key is made of the arguments Claude sent", () => {
  /** A refund whose schema draws a reference for each parse, as a default. */
  function refundWithReference(log: string, seen: string[]) {
    const owner = effectLog(log);
    return tool(
      "refund",
      "Refund a payment.",
      {
        paymentId: z.string(),
        reference: z
          .string()
          .default(() => randomUUID())
          .describe("Your reference"),
      },
      async (args, extra) => {
        seen.push(args.reference);
        return text(owner.apply("refund", args.paymentId, idemkeyContext(extra)?.idempotencyKey));
      },
    );
  }

  it("a session resumed in a new process with a generated default in the schema refunds once", async () => {
    const log = file("jsonl");
    const db = file("db");
    const seen: string[] = [];
    const outputs: unknown[] = [];
    for (let process = 0; process < 2; process++) {
      const store = sqliteStore(db);
      const client = await connect([
        idempotentSdkTool(createHarness({ store }), refundWithReference(log, seen), {
          effect: "keyed",
          taskId: SESSION,
        }),
      ]);
      outputs.push(await client.callTool({ name: "refund", arguments: { paymentId: "pay_9" } }));
      await client.close();
      await store.close();
    }
    expect(effects(log).map((e) => e.seq)).toEqual([1]);
    expect(texts(outputs[1]).at(-1)).toBe("refund-1");
    // The handler still gets the schema's default.
    expect(seen).toEqual([expect.stringMatching(/^[0-9a-f-]{36}$/)]);
  });

  it("with a zod 3 shape too: one refund across two processes, the description still listed", async () => {
    const log = file("jsonl");
    const db = file("db");
    const owner = effectLog(log);
    const refund = () =>
      tool(
        "refund",
        "Refund a payment.",
        {
          paymentId: z3.string(),
          reference: z3
            .string()
            .default(() => randomUUID())
            .describe("Your reference"),
        },
        async (args) => text(owner.apply("refund", [args.paymentId, args.reference.length], undefined)),
      );
    for (let process = 0; process < 2; process++) {
      const store = sqliteStore(db);
      const client = await connect([
        idempotentSdkTool(createHarness({ store }), refund(), { effect: "keyed", taskId: SESSION }),
      ]);
      const [listed] = (await client.listTools()).tools;
      expect(
        (listed!.inputSchema.properties as { reference: { description?: string } }).reference.description,
      ).toBe("Your reference");
      await client.callTool({ name: "refund", arguments: { paymentId: "pay_9" } });
      await client.close();
      await store.close();
    }
    expect(effects(log)).toEqual([expect.objectContaining({ seq: 1, input: ["pay_9", 36] })]);
  });

  it("lists the tool as the plain one: the same fields, descriptions and defaults", async () => {
    const plain = await connect([refundWithReference(file("jsonl"), [])]);
    const wrapped = await connect([
      idempotentSdkTool(createHarness(), refundWithReference(file("jsonl"), []), {
        effect: "keyed",
        taskId: SESSION,
      }),
    ]);
    const uuid = expect.stringMatching(/^[0-9a-f-]{36}$/);
    const [mine] = (await wrapped.listTools()).tools;
    const [theirs] = (await plain.listTools()).tools;
    for (const listed of [mine, theirs]) {
      expect((listed!.inputSchema.properties as { reference: unknown }).reference).toEqual({
        type: "string",
        description: "Your reference",
        default: uuid,
      });
    }
    const withoutReference = (t: typeof mine) => ({
      ...t,
      inputSchema: { ...t!.inputSchema, properties: { ...t!.inputSchema.properties, reference: null } },
    });
    expect(withoutReference(mine)).toEqual(withoutReference(theirs));
    await plain.close();
    await wrapped.close();
  });
});

describe("idempotentSdkTool: what Claude reads", () => {
  it("a replayed call's result starts with the replayed text, the tool's content after it unchanged", async () => {
    const log = file("jsonl");
    const account = { funded: true };
    const harness = createHarness();
    const client = await connect([
      idempotentSdkTool(harness, payTool(log, account), { effect: "keyed", taskId: SESSION }),
    ]);
    const first = await client.callTool({ name: "pay", arguments: PAYMENT });
    const second = await client.callTool({ name: "pay", arguments: PAYMENT });
    expect(first).toEqual(text("charge-1"));
    expect(second).toEqual({
      content: [
        { type: "text", text: defaultModelTexts.replayed({ tool: "pay", key: expect.any(String) as never }) },
        { type: "text", text: "charge-1" },
      ],
    });
    await client.close();
  });

  it("createHarness({ modelTexts }) replaces both texts", async () => {
    const harness = createHarness({
      modelTexts: {
        replayed: ({ tool }) => `${tool}: done before`,
        outcomeUnknown: ({ tool, key }) => `${tool}: unknown, key ${key}`,
      },
    });
    const client = await connect([
      idempotentSdkTool(harness, payTool(file("jsonl"), { funded: true }), {
        effect: "keyed",
        taskId: SESSION,
      }),
      idempotentSdkTool(harness, emailTool(file("jsonl"), "throw"), { effect: "unguarded", taskId: SESSION }),
    ]);
    await client.callTool({ name: "pay", arguments: PAYMENT });
    expect(texts(await client.callTool({ name: "pay", arguments: PAYMENT }))).toEqual([
      "pay: done before",
      "charge-1",
    ]);
    const unknown = await client.callTool({ name: "send_email", arguments: { to: "a@b.c", body: "hi" } });
    expect(unknown.isError).toBe(true);
    expect(texts(unknown)).toEqual([expect.stringMatching(/^send_email: unknown, key [0-9a-f]{64}$/)]);
    await client.close();
  });

  it("checks noEffect when the tool is wrapped, naming the option", () => {
    expect(() =>
      idempotentSdkTool(createHarness(), payTool(file("jsonl"), { funded: true }), {
        effect: "unguarded",
        taskId: SESSION,
        noEffect: "yes" as never,
      }),
    ).toThrow(/noEffect/);
  });
});
