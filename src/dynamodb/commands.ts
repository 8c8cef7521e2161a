import { importPeer } from "../peer/import-peer.js";

/**
 * The SDK's command classes, imported once, when a store module is first loaded: the package is an optional peer,
 * and a missing one is reported by `MissingPeerError` naming `idemkey/dynamodb` and the versions to install.
 */
export const commands: typeof import("@aws-sdk/client-dynamodb") = await importPeer(
  "idemkey/dynamodb",
  "@aws-sdk/client-dynamodb",
  () => import("@aws-sdk/client-dynamodb"),
);
