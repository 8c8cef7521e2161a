import { testIntegration } from "./contract.js";
import { a2aToolDriver, idempotentExecutorDriver } from "./drivers/a2a.js";

testIntegration(a2aToolDriver);
testIntegration(idempotentExecutorDriver);
