import { createHarness, defineTool, OutcomeUnknownError, WaitTimeoutError } from "../src/index.js";
import { sqliteStore } from "../src/sqlite/index.js";

/**
 * Leaves in a kept ledger the two things the inspector is for, which a finished run resolves by itself: a refund
 * parked for a person's approval (it waits for no one: `approvalTimeoutMs: 0`), and an email whose send failed
 * ambiguously, recorded as an unknown outcome for a person to resolve. Neither reaches a real owner.
 */
export async function leaveForInspector(path: string): Promise<void> {
  const store = sqliteStore(path);
  try {
    const harness = createHarness({ store, approvalTimeoutMs: 0 });
    const refund = defineTool({
      name: "refundCharge",
      effect: "keyed",
      requiresApproval: true,
      run: async () => ({ refunded: true }),
    });
    await harness
      .call("task-inspect", refund, { charge: "ch_demo_1", amountCents: 4_200 })
      .catch((error: unknown) => {
        if (!(error instanceof WaitTimeoutError)) throw error;
      });
    const email = defineTool({
      name: "sendMessage",
      effect: "unguarded",
      run: async () => {
        throw new Error("the connection closed before the mail server answered");
      },
    });
    await harness
      .call("task-inspect", email, { to: "oncall@acme.test", subject: "[task-inspect] refund requested" })
      .catch((error: unknown) => {
        if (!(error instanceof OutcomeUnknownError)) throw error;
      });
  } finally {
    await store.close();
  }
}
