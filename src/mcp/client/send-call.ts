import type { McpCallToolResult } from "../types.js";

/** A `tools/call` request's params, as `mcpTool` sends them. */
export interface McpCallParams {
  name: string;
  arguments?: { [name: string]: unknown };
  _meta?: { [name: string]: unknown };
}

/**
 * The one method of an MCP `Client` that `mcpTool` uses: a connected `Client` of either SDK line fits. v1
 * (`@modelcontextprotocol/sdk`) takes `callTool(params, resultSchema, options)`, v2 (`@modelcontextprotocol/client`)
 * `callTool(params, options)`; a v2 client is told apart by its `getNegotiatedProtocolVersion` method.
 */
export interface McpCallClient {
  // biome-ignore lint/suspicious/noExplicitAny: the two SDK lines' second parameters differ; either is accepted.
  callTool(params: McpCallParams, ...rest: any[]): Promise<unknown>;
}

/**
 * Sends one `tools/call` through a connected client of either SDK line: v1 (`@modelcontextprotocol/sdk`) takes
 * `callTool(params, resultSchema, options)`, v2 (`@modelcontextprotocol/client`) `callTool(params, options)`; a v2
 * client is told apart by its `getNegotiatedProtocolVersion` method.
 */
export function callSender(
  client: McpCallClient,
): (params: McpCallParams, signal: AbortSignal, timeoutMs: number | undefined) => Promise<McpCallToolResult> {
  const v2 =
    typeof (client as { getNegotiatedProtocolVersion?: unknown }).getNegotiatedProtocolVersion === "function";
  return async (params, signal, timeoutMs) => {
    const options = timeoutMs === undefined ? { signal } : { signal, timeout: timeoutMs };
    return (
      v2 ? await client.callTool(params, options) : await client.callTool(params, undefined, options)
    ) as McpCallToolResult;
  };
}
