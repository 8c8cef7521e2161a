import { afterAll, beforeAll } from "vitest";
import { postgresService } from "../../support/services.js";
import { dbosDriver, dbosEngine } from "./drivers/dbos.js";
import { testEngine } from "./engines.js";

// DBOS is one engine per process, launched once for the file on its own system database, dropped afterwards.
const service = await postgresService();
const engine = dbosEngine(service);
if (service.skip === undefined) {
  beforeAll(() => engine.launch(), 120_000);
  afterAll(() => engine.shutdown(), 60_000);
}

testEngine(service.skip === undefined ? dbosDriver : { ...dbosDriver, skip: service.skip });
