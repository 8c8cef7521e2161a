import { memoryStore } from "../../src/store/memory.js";
import { testStore } from "./contract.js";

testStore("memory", (clock) => memoryStore({ clock }));
