import { defineDriver } from "./driver.js";
import { memoryStore } from "./memory.js";

/** `memory:`: a store in this process, empty when opened; for a quick look at the inspector and for tests. */
export const memoryDriver = defineDriver({
  engine: "memory",
  name: "memory",
  schemes: ["memory"],
  example: "memory:",
  params: [],
  peers: [],
  parse(url, context) {
    if (url.slice(url.indexOf(":") + 1) !== "") context.fail(": memory: takes no path and no parameters");
    return {};
  },
  async open(_fields, context) {
    const store = memoryStore();
    return { store, label: context.label, close: () => store.close() };
  },
});
