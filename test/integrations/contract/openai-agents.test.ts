import { testIntegration } from "./contract.js";
import { openaiAgentsDriver } from "./drivers/openai-agents.js";

testIntegration(openaiAgentsDriver);
