import { testIntegration } from "./contract.js";
import { claudeAgentSdkDriver } from "./drivers/claude-agent-sdk.js";

testIntegration(claudeAgentSdkDriver);
