import { createSdkMcpServer, tool } from "@anthropic-ai/claude-agent-sdk";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { idemkeyContext, idempotentSdkTool } from "../../../../src/claude-agent-sdk/index.js";
import type { Driver } from "../driver.js";

/**
 * `idempotentSdkTool` (Claude Agent SDK) served by `createSdkMcpServer` and called by a real MCP client, as Claude
 * Code calls it. The handler answers a failure as an error result, the SDK's way.
 */
export const claudeAgentSdkDriver: Driver = {
  name: "idempotentSdkTool (Claude Agent SDK)",
  cannot: {
    approval:
      "idempotentSdkTool takes no approval option: the Claude Agent SDK asks through canUseTool, before the tool and " +
      "outside the ledger",
  },
  async open(world) {
    const { name, effect, noEffect } = world.spec;
    const refund = tool(
      name,
      "Refund a payment.",
      world.shape(),
      async (_args, extra): Promise<CallToolResult> => {
        try {
          const value = await world.owner.act(idemkeyContext(extra)?.idempotencyKey);
          // The value itself as structured content, so that one JSON cannot hold reaches the adapter as it is.
          const text = JSON.stringify(value, (_key, v) => (typeof v === "bigint" ? String(v) : v));
          return {
            content: [{ type: "text", text }],
            structuredContent: value as { [key: string]: unknown },
          };
        } catch (error) {
          return { content: [{ type: "text", text: String(error) }], isError: true };
        }
      },
    );
    const wrapped = idempotentSdkTool(world.harness(), refund, {
      effect,
      noEffect,
      taskId: world.taskId,
    } as Parameters<typeof idempotentSdkTool>[2]);
    const server = createSdkMcpServer({ name: "billing", version: "1.0.0", tools: [wrapped] });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.instance.connect(serverSide);
    const client = new Client({ name: "claude-code", version: "1.0.0" });
    await client.connect(clientSide);
    return {
      async call(args, options) {
        const result = (await client.callTool(
          { name, arguments: args as never },
          undefined,
          options,
        )) as CallToolResult;
        const text = result.content.map((part) => (part.type === "text" ? part.text : "")).join("\n");
        return result.isError === true ? { text, error: result } : { text };
      },
      close: () => client.close(),
    };
  },
};
