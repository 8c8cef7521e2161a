import { testIntegration } from "./contract.js";
import { expressDriver, fastifyDriver, honoDriver } from "./drivers/http.js";

testIntegration(honoDriver);
testIntegration(fastifyDriver);
testIntegration(expressDriver);
