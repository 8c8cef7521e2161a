import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ToolMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createHarness, defaultModelTexts, idempotencyKey, isErrorAnswer } from "../../src/index.js";
import { idempotencyMiddleware } from "../../src/langchain/index.js";
import { effectLog, effects } from "./fixtures/effect-log.js";
import { oneTurnAgent } from "./fixtures/langgraph-agent.js";

const dir = mkdtempSync(join(tmpdir(), "idemkey-langchain-outcomes-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const file = (ext: string) => join(dir, `f-${++files}.${ext}`);

const TASK = "ticket-41";
const PAYMENT = { invoice: "inv_7", cents: 2_500 };
const EMAIL = { to: "ana@example.com", body: "Your refund is on its way." };
const taskId = () => TASK;

/** A payment tool that answers an error message while the account is short, and charges once it is not. */
function payTool(log: string, account: { funded: boolean }) {
  const owner = effectLog(log);
  return tool(
    async (input: typeof PAYMENT, config) => {
      if (!account.funded) {
        const id = (config as { toolCall?: { id?: string } }).toolCall?.id ?? "";
        return new ToolMessage({
          content: "insufficient funds",
          tool_call_id: id,
          name: "pay",
          status: "error",
        });
      }
      return owner.apply("charge", input, undefined);
    },
    {
      name: "pay",
      description: "Pay an invoice.",
      schema: z.object({ invoice: z.string(), cents: z.number() }),
    },
  );
}

/** An email tool that sends through the fake owner and then fails: by an error message, or by throwing. */
function emailTool(log: string, failure: "answer" | "throw") {
  const owner = effectLog(log);
  return tool(
    async (input: typeof EMAIL, config) => {
      owner.apply("email", input, undefined);
      if (failure === "throw") throw new Error("SMTP connection reset after DATA");
      const id = (config as { toolCall?: { id?: string } }).toolCall?.id ?? "";
      return new ToolMessage({
        content: "SMTP reset",
        tool_call_id: id,
        name: "send_email",
        status: "error",
      });
    },
    {
      name: "send_email",
      description: "Send an email.",
      schema: z.object({ to: z.string(), body: z.string() }),
    },
  );
}

describe("idempotencyMiddleware: an error message follows the one rule", () => {
  it("a refused payment the classifier declares no-effect is handed back unchanged, and the call retried later charges once", async () => {
    const log = file("jsonl");
    const account = { funded: false };
    const harness = createHarness();
    const middleware = idempotencyMiddleware(harness, {
      taskId,
      effects: {
        pay: {
          effect: "unguarded",
          noEffect: (error) =>
            isErrorAnswer(error) && (error.answer as ToolMessage).content === "insufficient funds",
        },
      },
    });
    const turn = oneTurnAgent([payTool(log, account)], [{ name: "pay", args: PAYMENT }], [middleware]);
    const [refused] = await turn("t-1");
    expect([refused?.status, refused?.content]).toEqual(["error", "insufficient funds"]);
    account.funded = true;
    const [paid] = await turn("t-2");
    expect([paid?.status, paid?.content]).toEqual(["success", "charge-1"]);
    const [again] = await turn("t-3");
    expect(String(again?.content).endsWith("charge-1")).toBe(true);
    expect(effects(log).map((e) => e.kind)).toEqual(["charge"]);
  });

  for (const failure of ["answer", "throw"] as const) {
    it(`an email sent and then the tool ${failure === "answer" ? "answered an error" : "threw"}, with no classifier: never sent twice, and the model reads the unknown-outcome text`, async () => {
      const log = file("jsonl");
      const middleware = idempotencyMiddleware(createHarness(), {
        taskId,
        effects: { send_email: "unguarded" },
      });
      const turn = oneTurnAgent(
        [emailTool(log, failure)],
        [{ name: "send_email", args: EMAIL }],
        [middleware],
      );
      const unknown = defaultModelTexts.outcomeUnknown({
        tool: "send_email",
        key: idempotencyKey(TASK, "send_email", EMAIL),
        reason: "unclassified_error",
        answer: failure === "answer" ? "SMTP reset" : "SMTP connection reset after DATA",
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
  }
});

describe("idempotencyMiddleware: what the model reads when an error message nobody classified puts a call on hold", () => {
  it("a payment answering a ToolMessage with status 'error' ('insufficient funds') and no classifier: the model reads the tool's own words and that the error is why the call is on hold, not that it was interrupted, on the first call and on a replay", async () => {
    const log = file("jsonl");
    const account = { funded: false };
    const middleware = idempotencyMiddleware(createHarness(), { taskId, effects: { pay: "unguarded" } });
    const turn = oneTurnAgent([payTool(log, account)], [{ name: "pay", args: PAYMENT }], [middleware]);
    const key = idempotencyKey(TASK, "pay", PAYMENT);
    const [first] = await turn("t-1");
    account.funded = true;
    const [again] = await turn("t-2");
    for (const message of [first, again]) {
      expect(message?.status).toBe("error");
      const said = String(message?.content);
      expect(said).toContain("insufficient funds");
      expect(said).toMatch(/answered[^.]*with an error/);
      expect(said).toContain(key);
      expect(said).not.toMatch(/interrupted/);
    }
    expect(effects(log), "the call on hold never ran again").toEqual([]);
  });
});

describe("idempotencyMiddleware: the key is made of the arguments the model sent", () => {
  it("a schema with a generated default, the turn run again in a new agent on the same ledger: one refund", async () => {
    const log = file("jsonl");
    const owner = effectLog(log);
    const seen: string[] = [];
    const refund = tool(
      async (input: { paymentId: string; reference: string }) => {
        seen.push(input.reference);
        return owner.apply("refund", input.paymentId, undefined);
      },
      {
        name: "refund",
        description: "Refund a payment.",
        schema: z.object({ paymentId: z.string(), reference: z.string().default(() => randomUUID()) }),
      },
    );
    const middleware = idempotencyMiddleware(createHarness(), { taskId, effects: { refund: "keyed" } });
    const turn = oneTurnAgent([refund], [{ name: "refund", args: { paymentId: "pay_9" } }], [middleware]);
    await turn("t-1");
    await turn("t-2");
    expect(effects(log).map((e) => e.seq)).toEqual([1]);
    expect(seen).toHaveLength(1);
  });
});

describe("idempotencyMiddleware: what the model reads", () => {
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

  it("a replayed call's message starts with the replayed text; its artifact is untouched", async () => {
    const log = file("jsonl");
    const middleware = idempotencyMiddleware(createHarness(), { taskId, effects: { refund: "keyed" } });
    const turn = oneTurnAgent(
      [receiptTool(log)],
      [{ name: "refund", args: { paymentId: "pay_9" } }],
      [middleware],
    );
    const [first] = await turn("t-1");
    const [second] = await turn("t-2");
    const replayed = defaultModelTexts.replayed({
      tool: "refund",
      key: idempotencyKey(TASK, "refund", { paymentId: "pay_9" }),
    });
    expect([first?.content, first?.artifact]).toEqual(["refund-1", { receipt: "r-9" }]);
    expect([second?.content, second?.artifact, second?.status]).toEqual([
      `${replayed}\n\nrefund-1`,
      { receipt: "r-9" },
      "success",
    ]);
    expect(effects(log)).toHaveLength(1);
  });

  it("createHarness({ modelTexts }) replaces both texts", async () => {
    const harness = createHarness({
      modelTexts: {
        replayed: ({ tool }) => `${tool}: done before`,
        outcomeUnknown: ({ tool }) => `${tool}: unknown`,
      },
    });
    const middleware = idempotencyMiddleware(harness, {
      taskId,
      effects: { refund: "keyed", send_email: "unguarded" },
    });
    const turn = oneTurnAgent(
      [receiptTool(file("jsonl")), emailTool(file("jsonl"), "throw")],
      [
        { name: "refund", args: { paymentId: "pay_9" } },
        { name: "send_email", args: EMAIL },
      ],
      [middleware],
    );
    await turn("t-1");
    const [refund, email] = await turn("t-2");
    expect(refund?.content).toBe("refund: done before\n\nrefund-1");
    expect([email?.content, email?.status]).toEqual(["send_email: unknown", "error"]);
  });

  it("checks a policy's noEffect, naming the option", () => {
    expect(() =>
      idempotencyMiddleware(createHarness(), {
        effects: { pay: { effect: "unguarded", noEffect: 1 as never } },
      }),
    ).toThrow(/noEffect/);
  });
});
