/*
 * The Worker of the no-compatibility leg: the core as a Worker without nodejs_compat gets it. It derives the keys
 * it is sent and makes one harness call twice on memoryStore, counting the tool's effect itself.
 */
import {
  canonicalCall,
  createHarness,
  defineTool,
  hashImplementation,
  idempotencyKey,
} from "../../src/index.js";

/** A vector's input, as test-vectors/keys.json has it. */
export interface VectorInput {
  taskId: string;
  tool: string;
  args: unknown;
  step?: string | number;
}

/** What the Worker says about where it runs, besides its answers. */
export interface Runtime {
  hashImplementation: string;
  /** Whether anything Node-shaped is in reach: `process`, `Buffer`, `process.getBuiltinModule`. */
  process: boolean;
  buffer: boolean;
  getBuiltinModule: boolean;
}

function runtime(): Runtime {
  const global = globalThis as { process?: { getBuiltinModule?: unknown }; Buffer?: unknown };
  return {
    hashImplementation,
    process: global.process !== undefined,
    buffer: global.Buffer !== undefined,
    getBuiltinModule: typeof global.process?.getBuiltinModule === "function",
  };
}

async function keys(request: Request): Promise<Response> {
  const vectors = (await request.json()) as VectorInput[];
  const keyed = vectors.map((v) => {
    const options = v.step === undefined ? undefined : { step: v.step };
    return {
      canonical: canonicalCall(v.taskId, v.tool, v.args, options),
      key: idempotencyKey(v.taskId, v.tool, v.args, options),
    };
  });
  return Response.json({ runtime: runtime(), keys: keyed });
}

async function harnessCall(): Promise<Response> {
  let effects = 0;
  const tool = defineTool({
    name: "charge",
    effect: "keyed",
    run: ({ cents }: { cents: number }, ctx) => {
      effects += 1;
      return { charged: cents, key: ctx.idempotencyKey };
    },
  });
  const harness = createHarness();
  const first = await harness.callWithOutcome("task-1", tool, { cents: 500 });
  const second = await harness.callWithOutcome("task-1", tool, { cents: 500 });
  return Response.json({ runtime: runtime(), first, second, effects });
}

export default {
  async fetch(request: Request): Promise<Response> {
    const { pathname } = new URL(request.url);
    if (pathname === "/keys") return keys(request);
    if (pathname === "/harness") return harnessCall();
    return new Response("not found", { status: 404 });
  },
};
