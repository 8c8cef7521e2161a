import { testIntegration } from "./contract.js";
import { mcpDedupeDriver, mcpToolDriver, mcpToolsDriver } from "./drivers/mcp.js";

testIntegration(mcpToolDriver);
testIntegration(mcpToolsDriver);
testIntegration(mcpDedupeDriver);
