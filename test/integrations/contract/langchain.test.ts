import { testIntegration } from "./contract.js";
import { langchainDriver } from "./drivers/langchain.js";

testIntegration(langchainDriver);
