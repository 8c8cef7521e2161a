import { testIntegration } from "./contract.js";
import { langgraphDriver } from "./drivers/langgraph.js";

testIntegration(langgraphDriver);
