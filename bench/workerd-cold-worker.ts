/*
 * The Worker bench/workerd-cold.ts starts again and again: its module imports idemkey's core and Durable Object
 * store as it loads; its first request makes a harness on a Durable Object's SQLite and one keyed call.
 */
import { DurableObject } from "cloudflare:workers";
import { durableObjectStore } from "../src/cloudflare/index.js";
import { createHarness, defineTool } from "../src/index.js";

interface Env {
  LEDGER: DurableObjectNamespace<Ledger>;
}

export class Ledger extends DurableObject<Env> {
  override async fetch(): Promise<Response> {
    let effects = 0;
    const tool = defineTool({
      name: "sendEmail",
      effect: "keyed",
      run: (args: { to: string }) => ({ sent: args.to, n: ++effects }),
    });
    const harness = createHarness({ store: durableObjectStore(this.ctx.storage) });
    return Response.json(await harness.call("task-1", tool, { to: "ana@example.com" }));
  }
}

export default {
  fetch: (request, env) => env.LEDGER.get(env.LEDGER.idFromName("bench")).fetch(request),
} satisfies ExportedHandler<Env>;
