import { inngestDriver } from "./drivers/inngest.js";
import { temporalDriver } from "./drivers/temporal.js";
import { testEngine } from "./engines.js";

testEngine(temporalDriver);
testEngine(inngestDriver);
