import { importPeer } from "../peer/import-peer.js";
import { type DriverPeer, defineDriver } from "../store/driver.js";
import { readServerUrl } from "../store/driver-url.js";

const PARAMS = ["table", "schema"];

const PEERS: [DriverPeer, ...DriverPeer[]] = [{ package: "pg", range: "^8.0.0" }];

/** `postgres://` or `postgresql://` (`?table=`, `?schema=`; the other parameters go to `pg`). */
export const postgresDriver = defineDriver({
  engine: "postgres",
  name: "PostgreSQL",
  schemes: ["postgres", "postgresql"],
  example: "postgres://...",
  params: PARAMS,
  peers: PEERS,
  parse(url, context) {
    const parsed = readServerUrl(url, context, { params: PARAMS, others: "keep" });
    return { connectionString: parsed.url, ...parsed.params };
  },
  async open(fields, context) {
    const { default: pg } = await importPeer("idemkey/postgres", PEERS[0].package, () => import("pg"));
    const { postgresStore } = await import("./store.js");
    const pool = new pg.Pool({
      connectionString: fields.connectionString,
      max: 4,
      connectionTimeoutMillis: 5_000,
    });
    // An idle client's error (the server restarting) must not crash the inspector; the next query reports it.
    pool.on("error", () => {});
    const options: { table?: string; schema?: string } = {};
    if (fields.table !== undefined) options.table = fields.table;
    if (fields.schema !== undefined) options.schema = fields.schema;
    const store = postgresStore(pool, options);
    return { store, label: context.label, close: () => store.close().finally(() => pool.end()) };
  },
});
