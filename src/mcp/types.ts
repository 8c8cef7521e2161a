/*
 * The MCP shapes idemkey/mcp reads and writes, written out here so that neither SDK line is needed to type it: the
 * v1 package (`@modelcontextprotocol/sdk`) and the v2 packages (`@modelcontextprotocol/server`, `/client`) each
 * declare their own, and both are assignable to these. Only the fields used here are named; the rest pass through.
 */

/** One part of a tool result's content. */
export interface McpContent {
  type: string;
  text?: string;
  [field: string]: unknown;
}

/** A `tools/call` result as a server sends it (both SDK lines' `CallToolResult`). */
export interface McpCallToolResult {
  content: McpContent[];
  structuredContent?: { [name: string]: unknown };
  isError?: boolean;
  _meta?: { [name: string]: unknown };
  [field: string]: unknown;
}

/** What a server says of a tool's behaviour: hints, trusted only when `mcpTools` is told to. */
export interface McpToolAnnotations {
  readOnlyHint?: boolean;
  idempotentHint?: boolean;
  destructiveHint?: boolean;
  [field: string]: unknown;
}

/** A tool as `tools/list` returns it. */
export interface McpToolDefinition {
  name: string;
  description?: string;
  inputSchema: { [field: string]: unknown };
  annotations?: McpToolAnnotations;
  [field: string]: unknown;
}
