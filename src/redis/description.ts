import { importPeer } from "../peer/import-peer.js";
import { type DriverPeer, defineDriver } from "../store/driver.js";
import { readServerUrl } from "../store/driver-url.js";

const PARAMS = ["prefix"];

const PEERS: [DriverPeer, ...DriverPeer[]] = [
  { package: "ioredis", range: "^5.0.0 || ^6.0.0" },
  { package: "redis", range: "^4.0.0 || ^5.0.0 || ^6.0.0" },
];

/** `redis://` or `rediss://` (`?prefix=`), opened with ioredis; `redisStore` takes a node-redis client too. */
export const redisDriver = defineDriver({
  engine: "redis",
  name: "Redis",
  schemes: ["redis", "rediss"],
  example: "redis://...",
  params: PARAMS,
  peers: PEERS,
  parse(url, context) {
    const parsed = readServerUrl(url, context, {
      params: PARAMS,
      others: "reject",
      check: ({ protocol, hostname }) => {
        if (hostname === "") context.fail(` names no host; use ${protocol}//127.0.0.1:6379`);
      },
    });
    return { url: parsed.url, ...parsed.params };
  },
  async open(fields, context) {
    const { Redis } = await importPeer("idemkey/redis", PEERS[0].package, () => import("ioredis"));
    const { redisStore } = await import("./store.js");
    const client = new Redis(fields.url ?? "", {
      lazyConnect: true,
      maxRetriesPerRequest: 1,
      connectTimeout: 5_000,
    });
    client.on("error", () => {});
    const store = redisStore(client, fields.prefix === undefined ? {} : { prefix: fields.prefix });
    return {
      store,
      label: context.label,
      close: () =>
        store.close().finally(() =>
          client.quit().then(
            () => undefined,
            () => client.disconnect(),
          ),
        ),
    };
  },
});
