import { testIntegration } from "./contract.js";
import { harnessDriver } from "./drivers/harness.js";

testIntegration(harnessDriver);
