import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

/** A real restate-server from the npm package's own binary, on loopback, with its data in a temporary directory. */
export interface RestateServer {
  readonly ingress: string;
  readonly admin: string;
  /** Registers (or re-registers) a service endpoint listening at `uri` with the server. */
  register(uri: string): Promise<void>;
  stop(): Promise<void>;
}

const require = createRequire(import.meta.url);

export function restateBinary(): string {
  const pkg = require.resolve(`@restatedev/restate-server-${process.platform}-${process.arch}/package.json`);
  return join(dirname(pkg), "bin", "restate-server");
}

export async function startRestateServer(): Promise<RestateServer> {
  const dir = mkdtempSync(join(tmpdir(), "idemkey-restate-"));
  const child: ChildProcess = spawn(
    restateBinary(),
    ["--no-logo", "--listen-mode", "tcp", "--use-random-ports", "true", "--bind-ip", "127.0.0.1"],
    {
      cwd: dir,
      env: {
        ...process.env,
        RESTATE_BASE_DIR: dir,
        RESTATE_NODE_NAME: "idemkey-test",
        RESTATE_DISABLE_TELEMETRY: "true",
        RESTATE_LOG_DISABLE_ANSI_CODES: "true",
        RESTATE_LOG_FILTER: "warn,restate=info",
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let log = "";
  const exited = new Promise<never>((_, reject) =>
    child.once("exit", (code, signal) =>
      reject(
        new Error(`restate-server exited (${code ?? signal}) before it was ready:\n${log.slice(-4000)}`),
      ),
    ),
  );
  exited.catch(() => {});
  const ports = new Promise<{ ingress: string; admin: string }>((resolve) => {
    const onData = (chunk: Buffer) => {
      log += chunk.toString("utf8");
      const ingress = /Ingress HTTP listening[\s\S]*?server\.port: (\d+)/.exec(log)?.[1];
      const admin = /Admin API starting on: (http:\/\/127\.0\.0\.1:\d+)/.exec(log)?.[1];
      if (ingress && admin) resolve({ ingress: `http://127.0.0.1:${ingress}`, admin });
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGKILL");
      await gone;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const { ingress, admin } = await Promise.race([ports, exited]);
    return {
      ingress,
      admin,
      async register(uri) {
        // The cluster provisions itself after the admin API is up: poll until it accepts the deployment.
        for (let n = 0; ; n++) {
          const res = await fetch(`${admin}/deployments`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ uri, force: true }),
          }).catch((error: unknown) => error as Error);
          if (!(res instanceof Error) && res.ok) return;
          if (n >= 300) {
            const why = res instanceof Error ? res.message : `${res.status} ${await res.text()}`;
            throw new Error(`restate-server did not register ${uri}: ${why}`);
          }
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
