import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { connect, createServer } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { createDynamoTable, dynamoStore } from "../src/dynamodb/index.js";
import { createHarness, defineTool } from "../src/harness/index.js";
import { small } from "./payloads.js";
import { printTable } from "./table.js";

const CALLS = 300;

/**
 * The harness on `dynamoStore` against a dynalite of its own (in another process, so its CPU is not counted): per
 * call, the requests sent (counted at the client) and this process's CPU (`process.cpuUsage`), which is what a Lambda
 * is billed for besides waiting. Latency is not shown: dynalite on loopback says nothing of DynamoDB's.
 */
export async function benchDynamo(): Promise<void> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = "true";
  const port = await freePort();
  const cli = createRequire(import.meta.url).resolve("dynalite/cli.js");
  const server = spawn(
    process.execPath,
    [cli, "--port", String(port), "--host", "127.0.0.1", "--createTableMs", "0"],
    {
      stdio: "ignore",
    },
  );
  try {
    while (!(await answers(port))) await sleep(50);
    const client = new DynamoDBClient({
      endpoint: `http://127.0.0.1:${port}`,
      region: "us-east-1",
      credentials: { accessKeyId: "bench", secretAccessKey: "bench" },
    });
    await createDynamoTable(client, { table: "idemkey-bench" });
    let sent = 0;
    const counted = {
      send: (command: unknown) => {
        sent++;
        return client.send(command as never);
      },
    };
    const harness = createHarness({ store: dynamoStore(counted, { table: "idemkey-bench" }) });
    const tool = defineTool({
      name: "bench",
      effect: "keyed",
      run: async (args: typeof small & { n: number }) => args.n,
    });
    const call = (n: number) => harness.call("bench", tool, { ...small, n });
    /** Times `CALLS` calls of keys `from..`, after 20 like them (which teach the store which case is common). */
    const measure = async (warm: number, from: number) => {
      for (let n = 0; n < 20; n++) await call(warm + n);
      const before = sent;
      const cpu = process.cpuUsage();
      for (let n = 0; n < CALLS; n++) await call(from + n);
      const used = process.cpuUsage(cpu);
      return [((sent - before) / CALLS).toFixed(2), ((used.user + used.system) / CALLS).toFixed(0)];
    };
    // Fresh keys from 1,000 (after fresh warm-ups from 0); then replays of them (after replays of the warm-ups).
    const fresh = await measure(0, 1_000);
    const replay = await measure(0, 1_000);
    printTable(
      `dynamodb: the harness on dynamoStore (dynalite, another process), ${CALLS} calls each`,
      ["case", "requests per call", "CPU µs per call (this process)"],
      [
        ["fresh (claim, complete)", ...fresh],
        ["replay", ...replay],
      ],
    );
    client.destroy();
  } finally {
    server.kill("SIGKILL");
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}
