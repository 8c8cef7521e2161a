/**
 * idemkey inside Restate, offline: the restate-server binary from the @restatedev/restate-server npm package runs on
 * loopback with its data in a temporary directory; a service charges a card in a `ctx.run` block; the payments API
 * makes the charge and loses its reply; Restate retries the block. The retry forwards the same idempotency key (from
 * the invocation id and the block's name), so the API replays its first answer: one charge.
 *
 * Run: npm run example:restate (Node.js 22 or later: the Restate SDK uses Promise.withResolvers)
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import http2 from "node:http2";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import * as restate from "@restatedev/restate-sdk";
// In an application: from "idemkey" and "idemkey/restate".
import { createHarness, defineTool } from "../../src/index.js";
import { run } from "../../src/restate/index.js";
import { paymentsApi } from "../engines/payments.js";

if (Number(process.versions.node.split(".")[0]) < 22) {
  console.error(`The Restate SDK needs Node.js 22 or later; this is ${process.version}.`);
  process.exit(2);
}

const api = await paymentsApi();
// The harness does not retry on its own here: the retries are Restate's.
const harness = createHarness({ retry: { retries: 0 } });
const chargeCard = defineTool({
  name: "chargeCard",
  effect: "keyed",
  run: (args: { amount: number }, ctx) => api.charge(args.amount, ctx.idempotencyKey),
});
const checkout = restate.service({
  name: "checkout",
  handlers: {
    pay: async (ctx: restate.Context, amount: number) => run(ctx, harness, chargeCard, { amount }),
  },
});

const endpoint = http2.createServer(restate.createEndpointHandler({ services: [checkout] }));
endpoint.listen(0, "127.0.0.1");
await once(endpoint, "listening");

const dir = mkdtempSync(join(tmpdir(), "idemkey-example-restate-"));
const bin = join(
  dirname(
    createRequire(import.meta.url).resolve(
      `@restatedev/restate-server-${process.platform}-${process.arch}/package.json`,
    ),
  ),
  "bin",
  "restate-server",
);
const server = spawn(
  bin,
  ["--no-logo", "--listen-mode", "tcp", "--use-random-ports", "true", "--bind-ip", "127.0.0.1"],
  {
    cwd: dir,
    env: {
      ...process.env,
      RESTATE_BASE_DIR: dir,
      RESTATE_DISABLE_TELEMETRY: "true",
      RESTATE_LOG_DISABLE_ANSI_CODES: "true",
    },
    stdio: ["ignore", "pipe", "pipe"],
  },
);
try {
  let log = "";
  const { ingress, admin } = await new Promise<{ ingress: string; admin: string }>((resolve, reject) => {
    server.once("exit", () => reject(new Error(`restate-server exited:\n${log}`)));
    const read = (chunk: Buffer) => {
      log += chunk;
      const ingressPort = /Ingress HTTP listening[\s\S]*?server\.port: (\d+)/.exec(log)?.[1];
      const adminUrl = /Admin API starting on: (http:\/\/127\.0\.0\.1:\d+)/.exec(log)?.[1];
      if (ingressPort && adminUrl) resolve({ ingress: `http://127.0.0.1:${ingressPort}`, admin: adminUrl });
    };
    server.stdout.on("data", read);
    server.stderr.on("data", read);
  });
  const uri = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}`;
  // The server provisions itself just after its admin API is up: try until it takes the deployment.
  for (let n = 0; ; n++) {
    const res = await fetch(`${admin}/deployments`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ uri }),
    }).catch(() => undefined);
    if (res?.ok) break;
    if (n === 300) throw new Error("restate-server did not accept the deployment");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const res = await fetch(`${ingress}/checkout/pay`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "1999",
  });
  // A failed invocation answers with Restate's error object, not a receipt: the example fails then too.
  if (!res.ok) process.exitCode = 1;
  console.log("receipt:", await res.json());
  console.log(
    `requests to the payments API: ${api.requests()} (the first reply was lost; Restate retried the block)`,
  );
  console.log(`charges made: ${api.charges.length}, under key ${api.charges[0]?.key.slice(0, 16)}...`);
  if (api.charges.length !== 1) process.exitCode = 1;
} finally {
  server.kill("SIGKILL");
  endpoint.close();
  await api.close();
  rmSync(dir, { recursive: true, force: true });
}
