import { Hono } from "hono";
import { afterAll, describe, expect, it } from "vitest";
import { idempotency } from "../../src/hono/index.js";
import { memoryStore } from "../../src/store/memory.js";

/**
 * The owner engine through Hono on a real listener of the runtime's own server (Bun.serve, Deno.serve): a retry
 * with the same key replays the first answer and the handler, which counts its own runs, ran once.
 */
type Stop = () => Promise<void>;
const globals = globalThis as unknown as {
  Bun?: {
    serve(options: { port: number; fetch: (r: Request) => Response | Promise<Response> }): {
      port: number;
      stop(force?: boolean): Promise<void> | void;
    };
  };
  Deno?: {
    serve(
      options: { port: number; hostname: string; onListen?: () => void },
      handler: (r: Request) => Response | Promise<Response>,
    ): { addr: { port: number }; shutdown(): Promise<void> };
  };
};

function serve(fetch: (r: Request) => Response | Promise<Response>): { port: number; stop: Stop } {
  if (globals.Bun) {
    const server = globals.Bun.serve({ port: 0, fetch });
    return { port: server.port, stop: async () => void (await server.stop(true)) };
  }
  if (globals.Deno) {
    const server = globals.Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, fetch);
    return { port: server.addr.port, stop: () => server.shutdown() };
  }
  throw new Error("this file runs in the Bun and Deno legs only");
}

const stops: Stop[] = [];
afterAll(async () => {
  for (const stop of stops) await stop();
});

describe("idemkey/hono on the runtime's own HTTP server", () => {
  it("runs the handler once for two requests with one key, and replays the first answer", async () => {
    const runs: string[] = [];
    const app = new Hono();
    app.use("*", idempotency({ store: memoryStore(), scope: "single-tenant" }));
    app.post("/charges", async (c) => {
      const body = await c.req.json<{ cents: number }>();
      runs.push(`charge ${body.cents}`);
      return c.json({ id: `ch_${runs.length}`, cents: body.cents }, 201);
    });
    const server = serve(app.fetch);
    stops.push(server.stop);
    const send = () =>
      fetch(`http://127.0.0.1:${server.port}/charges`, {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": "order-77" },
        body: JSON.stringify({ cents: 1250 }),
      });
    const first = await send();
    const second = await send();
    expect(first.status).toBe(201);
    expect(await first.json()).toEqual({ id: "ch_1", cents: 1250 });
    expect(second.status).toBe(201);
    expect(await second.json()).toEqual({ id: "ch_1", cents: 1250 });
    expect(runs).toEqual(["charge 1250"]);
  });
});
