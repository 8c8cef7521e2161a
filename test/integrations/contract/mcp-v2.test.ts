import { testIntegration } from "./contract.js";
import { mcpDedupeV2Driver, mcpToolV2Driver } from "./drivers/mcp-v2.js";

testIntegration(mcpToolV2Driver);
testIntegration(mcpDedupeV2Driver);
