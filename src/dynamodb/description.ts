import { importPeer } from "../peer/import-peer.js";
import { type DriverPeer, defineDriver } from "../store/driver.js";
import { readServerUrl } from "../store/driver-url.js";

const PARAMS = ["region", "endpoint"];

const PEERS: [DriverPeer, ...DriverPeer[]] = [{ package: "@aws-sdk/client-dynamodb", range: "^3.600.0" }];

/**
 * `dynamodb://<table>?region=&endpoint=`: a table, in the region given (else the SDK's own default: `AWS_REGION`, the
 * profile), at the endpoint given (else AWS's; a local endpoint such as dynalite's or DynamoDB Local's for tests).
 * Credentials come from the SDK's default chain (the environment, the profile, the instance's role).
 */
export const dynamoDriver = defineDriver({
  engine: "dynamodb",
  name: "DynamoDB",
  schemes: ["dynamodb"],
  example: "dynamodb://<table>?region=",
  params: PARAMS,
  peers: PEERS,
  parse(url, context) {
    const parsed = readServerUrl(url, context, {
      params: PARAMS,
      others: "reject",
      check(u) {
        if (u.username !== "" || u.password !== "" || u.port !== "") {
          context.fail(
            ": name the table alone after dynamodb:// (credentials come from the AWS SDK's chain)",
          );
        }
        if (!/^[a-zA-Z0-9_.-]{3,255}$/.test(u.hostname) || (u.pathname !== "" && u.pathname !== "/")) {
          context.fail(" names no table; use dynamodb://<table>?region=<region>");
        }
      },
    });
    const fields: Record<string, string> = { table: new URL(url).hostname, ...parsed.params };
    if (fields.endpoint !== undefined && !/^https?:\/\/[^/]/.test(fields.endpoint)) {
      context.fail(`: ?endpoint= must be an http:// or https:// URL, got ${JSON.stringify(fields.endpoint)}`);
    }
    return fields;
  },
  async open(fields, context) {
    const sdk = await importPeer(
      "idemkey/dynamodb",
      PEERS[0].package,
      () => import("@aws-sdk/client-dynamodb"),
    );
    const { dynamoStore } = await import("./store.js");
    const config: { region?: string; endpoint?: string } = {};
    if (fields.region !== undefined) config.region = fields.region;
    if (fields.endpoint !== undefined) config.endpoint = fields.endpoint;
    const client = new sdk.DynamoDBClient(config);
    const store = dynamoStore(client, { table: fields.table! });
    return {
      store,
      label: context.label,
      close: () => store.close().finally(() => client.destroy()),
    };
  },
});
