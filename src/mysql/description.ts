import { importPeer } from "../peer/import-peer.js";
import { type DriverPeer, defineDriver } from "../store/driver.js";
import { readServerUrl } from "../store/driver-url.js";

const PARAMS = ["table"];

const PEERS: [DriverPeer, ...DriverPeer[]] = [{ package: "mysql2", range: "^3.9.0" }];

/** `mysql://user:password@host:port/database` (`?table=`; the other parameters go to `mysql2`). */
export const mysqlDriver = defineDriver({
  engine: "mysql",
  name: "MySQL",
  schemes: ["mysql"],
  example: "mysql://...",
  params: PARAMS,
  peers: PEERS,
  parse(url, context) {
    const parsed = readServerUrl(url, context, {
      params: PARAMS,
      others: "keep",
      check(u) {
        if (u.pathname === "" || u.pathname === "/") {
          context.fail(" names no database; use mysql://user@host:3306/<database>");
        }
      },
    });
    return { uri: parsed.url, ...parsed.params };
  },
  async open(fields, context) {
    const { default: mysql } = await importPeer(
      "idemkey/mysql",
      PEERS[0].package,
      () => import("mysql2/promise"),
    );
    const { mysqlStore } = await import("./store.js");
    const pool = mysql.createPool({ uri: fields.uri!, connectionLimit: 4, connectTimeout: 5_000 });
    const options: { table?: string } = {};
    if (fields.table !== undefined) options.table = fields.table;
    const store = mysqlStore(pool, options);
    return { store, label: context.label, close: () => store.close().finally(() => pool.end()) };
  },
});
