import { needsNode } from "../../support/node-version.js";
import { testIntegration } from "./contract.js";
import { type AiSdk, aiDriver } from "./drivers/ai.js";

// AI SDK 7 (the alias `ai7`) wants Node 22: imported only there, and reported as skipped by name elsewhere.
const node = needsNode(22, "ai 7");
const sdk = node.skip
  ? undefined
  : ({
      ...(await import("ai7")),
      MockLanguageModel: (await import("ai7/test")).MockLanguageModelV4,
    } as unknown as AiSdk);

testIntegration(
  aiDriver(
    "idempotentTools (AI SDK 7)",
    sdk ?? ({} as AiSdk),
    node.skip ? `ai 7 needs Node >= 22${node.label}` : undefined,
  ),
);
