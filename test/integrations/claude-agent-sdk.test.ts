import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSdkMcpServer, tool } from "@anthropic-ai/claude-agent-sdk";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { idemkeyContext, idempotentSdkTool } from "../../src/claude-agent-sdk/index.js";
import { createHarness, defaultModelTexts, idempotencyKey } from "../../src/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";
import { effectLog, effects } from "./fixtures/effect-log.js";

const dir = mkdtempSync(join(tmpdir(), "idemkey-claude-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const file = (ext: string) => join(dir, `f-${++files}.${ext}`);

const SESSION = "5b8e2c1a-4f0e-4d7e-9a51-2f6f0c7d9a11";
const REFUND = { paymentId: "pay_881", cents: 4_999 };
const text = (value: string): CallToolResult => ({ content: [{ type: "text", text: value }] });

/** The app's refund tool, made with the SDK's own `tool()`, writing through the fake owner at `log`. */
function refundTool(log: string, fail: { next: boolean } = { next: false }) {
  const owner = effectLog(log);
  return tool(
    "refund",
    "Refund a payment.",
    { paymentId: z.string(), cents: z.number() },
    async (args, extra) => {
      if (fail.next) {
        fail.next = false;
        return { content: [{ type: "text", text: "payments API unavailable" }], isError: true };
      }
      return text(owner.apply("refund", args, idemkeyContext(extra)?.idempotencyKey));
    },
  );
}

/** Serves `tools` with `createSdkMcpServer` and connects a real MCP client to it in memory: what Claude Code does. */
async function connect(tools: Parameters<typeof createSdkMcpServer>[0]["tools"]) {
  const server = createSdkMcpServer({ name: "billing", version: "1.0.0", tools });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.instance.connect(serverSide);
  const client = new Client({ name: "claude-code", version: "1.0.0" });
  await client.connect(clientSide);
  return client;
}

/** A session that called the refund, then the same session resumed in a new process, calling it again. */
async function callThenResume(db: string | undefined, log: string) {
  const outputs: unknown[] = [];
  for (let process = 0; process < 2; process++) {
    const store = db === undefined ? undefined : sqliteStore(db);
    const refund = refundTool(log);
    const wrapped = store
      ? idempotentSdkTool(createHarness({ store }), refund, { effect: "keyed", taskId: SESSION })
      : refund;
    const client = await connect([wrapped]);
    try {
      outputs.push(await client.callTool({ name: "refund", arguments: REFUND }));
    } finally {
      await client.close();
      await store?.close();
    }
  }
  return outputs;
}

describe("idempotentSdkTool served by createSdkMcpServer, through a real MCP client", () => {
  it("a session resumed in a new process that calls the refund again refunds once, and gets the first result", async () => {
    const log = file("jsonl");
    const db = file("db");
    const outputs = await callThenResume(db, log);
    expect(effects(log)).toEqual([
      { seq: 1, kind: "refund", input: REFUND, key: idempotencyKey(SESSION, "refund", REFUND) },
    ]);
    const replayed = defaultModelTexts.replayed({
      tool: "refund",
      key: idempotencyKey(SESSION, "refund", REFUND),
    });
    expect(outputs).toEqual([
      { content: [{ type: "text", text: "refund-1" }] },
      {
        content: [
          { type: "text", text: replayed },
          { type: "text", text: "refund-1" },
        ],
      },
    ]);
  });

  it("(control) the same calls with the plain SDK tool refund twice", async () => {
    const log = file("jsonl");
    await callThenResume(undefined, log);
    expect(effects(log).map((e) => e.seq)).toEqual([1, 2]);
  });

  it("lists the tool to the client exactly as the plain one", async () => {
    const plain = await connect([refundTool(file("jsonl"))]);
    const wrapped = await connect([
      idempotentSdkTool(createHarness(), refundTool(file("jsonl")), { effect: "keyed", taskId: SESSION }),
    ]);
    expect((await wrapped.listTools()).tools).toEqual((await plain.listTools()).tools);
    await plain.close();
    await wrapped.close();
  });

  it("does not record an error result: the next call runs again with the same key", async () => {
    const log = file("jsonl");
    const fail = { next: true };
    const harness = createHarness();
    const client = await connect([
      idempotentSdkTool(harness, refundTool(log, fail), { effect: "keyed", taskId: SESSION }),
    ]);
    const first = await client.callTool({ name: "refund", arguments: REFUND });
    expect(first.isError).toBe(true);
    expect(await client.callTool({ name: "refund", arguments: REFUND })).toEqual(text("refund-1"));
    const again = (await client.callTool({ name: "refund", arguments: REFUND })) as CallToolResult;
    expect(again.content.at(-1)).toEqual({ type: "text", text: "refund-1" });
    expect(effects(log)).toHaveLength(1);
    await client.close();
  });

  it("takes the task id from a function of the arguments and extra, and checks its options", async () => {
    const log = file("jsonl");
    const harness = createHarness();
    const client = await connect([
      idempotentSdkTool(harness, refundTool(log), {
        effect: "keyed",
        taskId: (args) => `ticket:${args.paymentId}`,
      }),
    ]);
    await client.callTool({ name: "refund", arguments: REFUND });
    expect(effects(log)[0]!.key).toBe(idempotencyKey("ticket:pay_881", "refund", REFUND));
    await client.close();
    const refund = refundTool(log);
    expect(() => idempotentSdkTool(harness, refund, { effect: "keyed", taskId: "" })).toThrow(
      /options\.taskId/,
    );
    expect(() => idempotentSdkTool(harness, refund, { effect: "often" as never, taskId: "t" })).toThrow(
      /tool\.effect/,
    );
    expect(() => idempotentSdkTool({} as never, refund, { effect: "keyed", taskId: "t" })).toThrow(/harness/);
  });
});
