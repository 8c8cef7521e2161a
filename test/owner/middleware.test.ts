import { sqliteStore } from "../../src/sqlite/index.js";
import { memoryStore } from "../../src/store/memory.js";
import { frameworks } from "./apps.js";
import { ownerSuite } from "./scenarios.js";

for (const framework of frameworks) {
  ownerSuite(framework, "memory", (clock) => memoryStore({ clock }));
  ownerSuite(framework, "sqlite", (clock) => sqliteStore(":memory:", { clock }));
}
