import { testIntegration } from "./contract.js";
import { ai6Driver } from "./drivers/ai.js";

testIntegration(ai6Driver);
