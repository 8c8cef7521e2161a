import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { DynamoDBClient, type DynamoDBClientConfig } from "@aws-sdk/client-dynamodb";
import { onCleanup } from "./cleanup.js";
import { freePort } from "./free-port.js";

/**
 * A private dynalite (DynamoDB on LevelDB, from the npm registry) in its own process on a free port, for the
 * DynamoDB tests: nothing leaves the machine. With `persist`, its data lives in a private temp dir, so that `kill`
 * and `start` model a DynamoDB that failed mid-call and came back with what it had committed. Stopped in `stop()`
 * and on the test process's exit.
 */
export interface PrivateDynalite {
  port: number;
  endpoint: string;
  /** A client for it, with dummy credentials (dynalite checks none) and the SDK's retries as given. */
  client(config?: Partial<DynamoDBClientConfig>): DynamoDBClient;
  /** SIGKILL: calls under way get a reset connection. */
  kill(): Promise<void>;
  /** Starts it again on the same port (after `kill`). */
  start(): Promise<void>;
  stop(): Promise<void>;
}

// The SDK warns once per process, on Node before 22, that later SDK versions will need 22; a passing run is quiet.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = "true";

const cli = createRequire(import.meta.url).resolve("dynalite/cli.js");

/** The credentials and region every test client uses; dynalite accepts any. */
export const DYNALITE_ENV = {
  AWS_ACCESS_KEY_ID: "idemkey-test",
  AWS_SECRET_ACCESS_KEY: "idemkey-test",
  AWS_REGION: "us-east-1",
};

export async function privateDynalite(options: { persist?: boolean } = {}): Promise<PrivateDynalite> {
  const port = await freePort();
  const dir = options.persist ? mkdtempSync(join(tmpdir(), "idemkey-dynalite-")) : undefined;
  let child: ChildProcess | undefined;
  const clients: DynamoDBClient[] = [];
  const undo = onCleanup(() => {
    if (child?.pid !== undefined && child.exitCode === null) child.kill("SIGKILL");
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });
  const endpoint = `http://127.0.0.1:${port}`;

  const start = async () => {
    const args = [cli, "--port", String(port), "--host", "127.0.0.1", "--createTableMs", "0"];
    if (dir !== undefined) args.push("--path", dir);
    child = spawn(process.execPath, args, { stdio: ["ignore", "ignore", "inherit"] });
    for (let tries = 0; !(await answers(port)); tries++) {
      if (child.exitCode !== null) throw new Error(`dynalite exited with ${child.exitCode} before listening`);
      if (tries > 600) throw new Error(`dynalite did not listen on ${port} within a minute`);
      await sleep(100);
    }
  };
  const kill = async () => {
    const dying = child;
    if (dying === undefined || dying.exitCode !== null) return;
    const exited = new Promise((resolve) => dying.once("exit", resolve));
    dying.kill("SIGKILL");
    await exited;
  };
  await start();
  return {
    port,
    endpoint,
    client: (config = {}) => {
      const client = new DynamoDBClient({
        endpoint,
        region: DYNALITE_ENV.AWS_REGION,
        credentials: {
          accessKeyId: DYNALITE_ENV.AWS_ACCESS_KEY_ID,
          secretAccessKey: DYNALITE_ENV.AWS_SECRET_ACCESS_KEY,
        },
        ...config,
      });
      clients.push(client);
      return client;
    },
    kill,
    start,
    stop: async () => {
      for (const client of clients) client.destroy();
      await kill();
      undo();
    },
  };
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
