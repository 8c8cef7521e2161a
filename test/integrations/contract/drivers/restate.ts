import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import * as restate from "@restatedev/restate-sdk";
import { defineTool, type Harness } from "../../../../src/index.js";
import { run as runBlock } from "../../../../src/restate/index.js";
import { type RestateServer, startRestateServer } from "../../../engines/restate-server.js";
import type { EngineDriver } from "../engines.js";
import { ARGS, type World } from "../world.js";

/** The world and harness of the execution running now: the service is registered once, with the server. */
let current: { world: World; harness: Harness } | undefined;
/** How many times Restate ran the block in the execution running now (its own retries included). */
let attempts = 0;
/** Each run's invocation id, as its handler saw it: what an attempt after the first purges. */
const invocations = new Map<string, string>();

const fast = { initialRetryInterval: 10, maxRetryAttempts: 3 };

const contract = restate.service({
  name: "contract",
  handlers: {
    charge: async (ctx: restate.Context, run: string) => {
      const { world, harness } = current!;
      invocations.set(run, ctx.request().id);
      const tool = defineTool({
        name: world.spec.name,
        effect: world.spec.effect,
        run: (_args: object, toolCtx) => world.owner.act(toolCtx.idempotencyKey),
      });
      return runBlock(ctx, counted(harness), tool, ARGS, fast);
    },
  },
});

/** The harness, counting the block's attempts: each attempt Restate makes calls it once. */
function counted(harness: Harness): Harness {
  return new Proxy(harness, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        if (property === "call" || property === "callWithOutcome") attempts += 1;
        return value.apply(target, args);
      };
    },
  });
}

let server: RestateServer | undefined;
let endpoint: http2.Http2Server | undefined;

/**
 * The real restate-server (as test/engines/restate.test.ts starts it), with the service endpoint in this process
 * (Node >= 22), so that the block reaches the world's owner, ledger and faults.
 */
export const restateEngine = {
  async start() {
    server = await startRestateServer();
    endpoint = http2.createServer(restate.createEndpointHandler({ services: [contract] }));
    await new Promise<void>((resolve) => endpoint!.listen(0, "127.0.0.1", resolve));
    await server.register(`http://127.0.0.1:${(endpoint.address() as AddressInfo).port}`);
  },
  async stop() {
    await server?.stop();
    await new Promise<void>((resolve) => (endpoint ? endpoint.close(() => resolve()) : resolve()));
  },
};

/**
 * `run` in a Restate handler on the real server: a run is an idempotent request (its idempotency key), which Restate
 * gives one invocation id, the key idemkey uses. An attempt after the first is the block run again under that id, as
 * Restate runs it when the endpoint died before the block's result reached the journal: the driver purges the
 * invocation first (the admin API), or Restate would answer the request from its own record and never reach idemkey.
 * "Would retry" is Restate running the block more than once (3 attempts allowed here).
 */
export const restateDriver: EngineDriver = {
  name: "run (Restate handler)",
  async execute(world, { run, attempt }) {
    const active = server!;
    const key = `${world.taskId}/${run}`;
    const earlier = invocations.get(key);
    if (attempt > 1 && earlier !== undefined) await purge(active, earlier);
    current = { world, harness: world.harness() };
    attempts = 0;
    try {
      const res = await fetch(`${active.ingress}/contract/charge`, {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": key },
        body: JSON.stringify(key),
      });
      const text = await res.text();
      if (res.ok) return { value: JSON.parse(text) as unknown };
      return { error: new Error(text), retryable: attempts > 1 };
    } finally {
      current = undefined;
    }
  },
};

async function purge(server: RestateServer, invocationId: string): Promise<void> {
  const res = await fetch(`${server.admin}/invocations/${invocationId}/purge`, { method: "PATCH" });
  if (!res.ok)
    throw new Error(`restate-server did not purge ${invocationId}: ${res.status} ${await res.text()}`);
}
