/**
 * idemkey with the OpenAI Agents SDK, offline (a scripted model, no network): a refund needs a person's approval, so
 * the run stops and its state is saved. The approved run is resumed from that saved state, and then resumed again
 * from the same state, as an app does when it crashed after resuming but before saving the new state. One refund.
 *
 * Run: npm run example:openai-agents
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  Agent,
  type AgentInputItem,
  type Model,
  type ModelRequest,
  type ModelResponse,
  type RunContext,
  Runner,
  RunState,
  Usage,
} from "@openai/agents";
import { z } from "zod";
// In an application: from "idemkey", "idemkey/openai-agents" and "idemkey/sqlite".
import { createHarness } from "../../src/index.js";
import { idemkeyContext, idempotentTool } from "../../src/openai-agents/index.js";
import { sqliteStore } from "../../src/sqlite/index.js";

type Ctx = { ticketId: string };
const refunds: { paymentId: string; key: string | undefined }[] = [];

/** A model that asks for the refund, then reports the tool's output. */
class ScriptedModel implements Model {
  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    const items: AgentInputItem[] = Array.isArray(request.input) ? request.input : [];
    const output = items.find((i) => i.type === "function_call_result");
    if (output === undefined) {
      const callId = `call_${Math.random().toString(36).slice(2, 8)}`;
      const args = JSON.stringify({ paymentId: "pay_881", cents: 4999 });
      return {
        usage: new Usage(),
        output: [
          {
            type: "function_call",
            id: `fc_${callId}`,
            callId,
            name: "refund",
            status: "completed",
            arguments: args,
          },
        ],
      };
    }
    const text = `Refunded: ${JSON.stringify(output.output)}`;
    return {
      usage: new Usage(),
      output: [
        {
          type: "message",
          id: "m1",
          role: "assistant",
          status: "completed",
          content: [{ type: "output_text", text }],
        },
      ],
    };
  }
  // biome-ignore lint/correctness/useYield: this example only uses getResponse.
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error("not scripted");
  }
}

const dir = mkdtempSync(join(tmpdir(), "idemkey-example-agents-"));
const ledger = join(dir, "ledger.db");
const runner = new Runner({ modelProvider: { getModel: () => new ScriptedModel() }, tracingDisabled: true });

/** What each process builds at start: the harness on the shared ledger, the tool and the agent. */
function boot() {
  const store = sqliteStore(ledger);
  const harness = createHarness({ store, onEvent: (e) => console.log(`  harness: ${e.type} ${e.tool}`) });
  const refund = idempotentTool(harness, {
    name: "refund",
    description: "Refund a payment.",
    parameters: z.object({ paymentId: z.string(), cents: z.number() }),
    needsApproval: true,
    effect: "keyed",
    // The ticket this run works on: it is saved with the RunState, so a resumed run has it too.
    taskId: (runContext: RunContext<Ctx>) => runContext.context.ticketId,
    execute: async ({ paymentId }, _runContext, details) => {
      // A real payments API would take the key as its idempotency key.
      refunds.push({ paymentId, key: idemkeyContext(details)?.idempotencyKey });
      return `refund-${refunds.length}`;
    },
  });
  return {
    store,
    agent: new Agent<Ctx>({ name: "support", instructions: "Resolve the ticket.", tools: [refund] }),
  };
}

console.log("Process 1: the run stops for approval; its state is saved.");
const p1 = boot();
const first = await runner.run(p1.agent, "Refund ticket T-1", { context: { ticketId: "T-1" } });
const saved = first.state.toString();
console.log(`  waiting for approval of: ${first.interruptions.map((i) => i.name).join(", ")}`);
await p1.store.close();

for (const name of [
  "Process 2: approved and resumed.",
  "Process 3: resumed again from the same saved state.",
]) {
  console.log(name);
  const p = boot();
  const state = await RunState.fromString<Ctx, typeof p.agent>(p.agent, saved);
  for (const interruption of state.getInterruptions()) state.approve(interruption);
  const result = await runner.run(p.agent, state);
  console.log(`  ${result.finalOutput}`);
  await p.store.close();
}
rmSync(dir, { recursive: true, force: true });

console.log(`Refunds made: ${refunds.length}`);
if (refunds.length !== 1) process.exitCode = 1;
