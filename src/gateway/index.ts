// The owner's half for owners you do not control: an MCP gateway (and an HTTP one) in front of them.

export { type HttpGateway, type HttpGatewayOptions, httpGateway } from "./http-gateway.js";
export { type McpGateway, mcpGateway, UPSTREAM_GONE_CODE } from "./mcp-gateway.js";
export { type McpHttpGateway, type McpHttpGatewayOptions, mcpHttpGateway } from "./mcp-http-listener.js";
export type { GatewayTransport, JsonRpcMessage, McpGatewayOptions } from "./mcp-options.js";
export { UpstreamClosedError } from "./upstream-closed-error.js";
