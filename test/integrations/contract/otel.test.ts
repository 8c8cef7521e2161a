import { testIntegration } from "./contract.js";
import { otelDriver } from "./drivers/otel.js";

testIntegration(otelDriver);
