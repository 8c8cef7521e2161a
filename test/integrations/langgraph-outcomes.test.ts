import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { tool } from "@langchain/core/tools";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createHarness, defaultModelTexts, idempotencyKey } from "../../src/index.js";
import { idemkeyContext, idempotentTool } from "../../src/langgraph/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { effectLog, effects } from "./fixtures/effect-log.js";
import { oneTurnAgent } from "./fixtures/langgraph-agent.js";

const dir = mkdtempSync(join(tmpdir(), "idemkey-langgraph-outcomes-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const file = (ext: string) => join(dir, `f-${++files}.${ext}`);

const TASK = "ticket-41";
const taskId = () => TASK;
const PAYMENT = { invoice: "inv_7", cents: 2_500 };
const EMAIL = { to: "ana@example.com", body: "Your refund is on its way." };

function payTool(log: string, account: { funded: boolean }) {
  const owner = effectLog(log);
  return tool(
    async (input: typeof PAYMENT) => {
      if (!account.funded) throw new Error("insufficient funds");
      return owner.apply("charge", input, undefined);
    },
    {
      name: "pay",
      description: "Pay an invoice.",
      schema: z.object({ invoice: z.string(), cents: z.number() }),
    },
  );
}

function emailTool(log: string) {
  const owner = effectLog(log);
  return tool(
    async (input: typeof EMAIL) => {
      owner.apply("email", input, undefined);
      throw new Error("SMTP connection reset after DATA");
    },
    {
      name: "send_email",
      description: "Send an email.",
      schema: z.object({ to: z.string(), body: z.string() }),
    },
  );
}

/** A refund whose schema draws a reference for each parse, as a default. */
function refundWithReference(log: string, seen: string[]) {
  const owner = effectLog(log);
  return tool(
    async (input: { paymentId: string; reference: string }) => {
      seen.push(input.reference);
      return owner.apply("refund", input.paymentId, idemkeyContext()?.idempotencyKey);
    },
    {
      name: "refund",
      description: "Refund a payment.",
      schema: z.object({ paymentId: z.string(), reference: z.string().default(() => randomUUID()) }),
    },
  );
}

/** A refund whose answer is content for the model and an artifact for the application. */
function receiptTool(log: string) {
  const owner = effectLog(log);
  return tool(
    async (input: { paymentId: string }) => [owner.apply("refund", input, undefined), { receipt: "r-9" }],
    {
      name: "refund",
      description: "Refund a payment.",
      schema: z.object({ paymentId: z.string() }),
      responseFormat: "content_and_artifact",
    },
  );
}

describe("idempotentTool: a failure follows the one rule", () => {
  it("a refused payment the noEffect classifier vouches for reaches the model as the tool's error, and the call retried later charges once", async () => {
    const log = file("jsonl");
    const account = { funded: false };
    // A refusal is not retried within the call here: the test is about the call made again later.
    const pay = idempotentTool(createHarness({ retry: { retries: 0 } }), payTool(log, account), {
      effect: "unguarded",
      taskId,
      noEffect: (error) => error instanceof Error && error.message === "insufficient funds",
    });
    const turn = oneTurnAgent([pay], [{ name: "pay", args: PAYMENT }]);
    const [refused] = await turn("t-1");
    expect(refused?.status).toBe("error");
    expect(String(refused?.content)).toMatch(/insufficient funds/);
    account.funded = true;
    const [paid] = await turn("t-2");
    expect(paid?.content).toBe("charge-1");
    const [again] = await turn("t-3");
    expect(String(again?.content).endsWith("charge-1")).toBe(true);
    expect(effects(log).map((e) => e.kind)).toEqual(["charge"]);
  });

  it("an email sent and then the tool threw, with no classifier: never sent twice, and the model reads the unknown-outcome text", async () => {
    const log = file("jsonl");
    const send = idempotentTool(createHarness(), emailTool(log), { effect: "unguarded", taskId });
    const turn = oneTurnAgent([send], [{ name: "send_email", args: EMAIL }]);
    const unknown = defaultModelTexts.outcomeUnknown({
      tool: "send_email",
      key: idempotencyKey(TASK, "send_email", EMAIL),
      reason: "unclassified_error",
      answer: "SMTP connection reset after DATA",
    });
    for (const thread of ["t-1", "t-2", "t-3"]) {
      const [message] = await turn(thread);
      expect([message?.status, message?.content, message?.tool_call_id]).toEqual([
        "error",
        unknown,
        "call_1",
      ]);
    }
    expect(effects(log).map((e) => e.kind)).toEqual(["email"]);
  });

  it("checks noEffect when the tool is wrapped, naming the option", () => {
    expect(() =>
      idempotentTool(createHarness(), emailTool(file("jsonl")), {
        effect: "unguarded",
        noEffect: 1 as never,
      }),
    ).toThrow(/noEffect/);
  });
});

describe("idempotentTool: the key is made of the arguments the model sent", () => {
  it("through a ToolNode, restarted on the same ledger and thread with a generated default in the schema: one refund", async () => {
    const log = file("jsonl");
    const db = file("db");
    const seen: string[] = [];
    const outputs: unknown[] = [];
    for (let process = 0; process < 2; process++) {
      const store = sqliteStore(db);
      const refund = idempotentTool(createHarness({ store }), refundWithReference(log, seen), {
        effect: "keyed",
      });
      const [message] = await oneTurnAgent(
        [refund],
        [{ name: "refund", args: { paymentId: "pay_9" } }],
      )("t-r");
      outputs.push(message?.content);
      await store.close();
    }
    expect(effects(log).map((e) => e.seq)).toEqual([1]);
    expect(String(outputs[1]).endsWith("refund-1")).toBe(true);
    expect(seen).toEqual([expect.stringMatching(/^[0-9a-f-]{36}$/)]);
  });

  it("invoked with its input in a node, replayed in a new process: one refund", async () => {
    const log = file("jsonl");
    const db = file("db");
    const outputs: unknown[] = [];
    for (let process = 0; process < 2; process++) {
      const store = sqliteStore(db);
      const refund = idempotentTool(createHarness({ store }), refundWithReference(log, []), {
        effect: "keyed",
      });
      outputs.push(
        await refund.invoke({ paymentId: "pay_9" } as never, { configurable: { thread_id: "t-n" } }),
      );
      await store.close();
    }
    expect(effects(log).map((e) => e.seq)).toEqual([1]);
    // Code that reads the output directly gets the recorded value, without the model's text.
    expect(outputs).toEqual(["refund-1", "refund-1"]);
  });
});

describe("idempotentTool: what the model reads, and nothing the tool returns is dropped", () => {
  it("content_and_artifact through a ToolNode: the artifact reaches the message on the first run and on a replay", async () => {
    const log = file("jsonl");
    const refund = idempotentTool(createHarness(), receiptTool(log), { effect: "keyed", taskId });
    const turn = oneTurnAgent([refund], [{ name: "refund", args: { paymentId: "pay_9" } }]);
    const [first] = await turn("t-1");
    const [second] = await turn("t-2");
    const replayed = defaultModelTexts.replayed({
      tool: "refund",
      key: idempotencyKey(TASK, "refund", { paymentId: "pay_9" }),
    });
    expect([first?.content, first?.artifact, first?.status]).toEqual([
      "refund-1",
      { receipt: "r-9" },
      "success",
    ]);
    expect([second?.content, second?.artifact, second?.status]).toEqual([
      `${replayed}\n\nrefund-1`,
      { receipt: "r-9" },
      "success",
    ]);
    expect(effects(log)).toHaveLength(1);
  });

  it("(control) the plain content_and_artifact tool's message carries the same artifact", async () => {
    const [plain] = await oneTurnAgent(
      [receiptTool(file("jsonl"))],
      [{ name: "refund", args: { paymentId: "p" } }],
    )("t-1");
    expect([plain?.content, plain?.artifact]).toEqual(["refund-1", { receipt: "r-9" }]);
  });

  it("createHarness({ modelTexts }) replaces both texts", async () => {
    const harness = createHarness({
      modelTexts: {
        replayed: ({ tool }) => `${tool}: done before`,
        outcomeUnknown: ({ tool }) => `${tool}: unknown`,
      },
    });
    const turn = oneTurnAgent(
      [
        idempotentTool(harness, receiptTool(file("jsonl")), { effect: "keyed", taskId }),
        idempotentTool(harness, emailTool(file("jsonl")), { effect: "unguarded", taskId }),
      ],
      [
        { name: "refund", args: { paymentId: "pay_9" } },
        { name: "send_email", args: EMAIL },
      ],
    );
    await turn("t-1");
    const [refund, email] = await turn("t-2");
    expect(refund?.content).toBe("refund: done before\n\nrefund-1");
    expect([email?.content, email?.status]).toEqual(["send_email: unknown", "error"]);
  });
});
