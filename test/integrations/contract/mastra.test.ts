import { testIntegration } from "./contract.js";
import type { Driver } from "./driver.js";

// @mastra/core declares node >= 22.13 and uses its APIs: the driver is imported only there.
const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
const supported = major > 22 || (major === 22 && minor >= 13);
const name = "idempotentMastraTool (Mastra workflow)";
const driver: Driver = supported
  ? (await import("./drivers/mastra.js")).mastraDriver
  : {
      name,
      skip: `@mastra/core needs Node >= 22.13 (this is ${process.versions.node})`,
      open: () => Promise.reject(),
    };

testIntegration(driver);
