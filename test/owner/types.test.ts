import type { Request as ExpressRequest } from "express";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { type Context, Hono, type MiddlewareHandler } from "hono";
import { describe, expectTypeOf, it } from "vitest";
import { idempotency as expressIdempotency } from "../../src/express/index.js";
import { idempotency as fastifyIdempotency } from "../../src/fastify/index.js";
import { type IdempotentFetch, idempotentFetch } from "../../src/fetch/index.js";
import type { ToolContext } from "../../src/harness/index.js";
import { idempotency as honoIdempotency } from "../../src/hono/index.js";
import { memoryStore } from "../../src/store/memory.js";

// The options are one type; each adapter gives `scope` its own framework's request, inferred without annotations.
describe("types of the owner-side API", () => {
  const store = memoryStore();

  it("gives scope the framework's request and fits where the framework expects middleware", () => {
    const hono = honoIdempotency({
      store,
      scope: (c) => {
        expectTypeOf(c).toEqualTypeOf<Context>();
        return c.req.header("x-account") ?? "";
      },
    });
    expectTypeOf(hono).toMatchTypeOf<MiddlewareHandler>();
    new Hono().use("*", hono);
    expectTypeOf(hono.purge).returns.resolves.toBeNumber();

    expressIdempotency({
      store,
      scope: (req) => {
        expectTypeOf(req).toEqualTypeOf<ExpressRequest>();
        return req.get("x-account") ?? "";
      },
    });
    const plugin = fastifyIdempotency({
      store,
      scope: async (request) => {
        expectTypeOf(request).toEqualTypeOf<FastifyRequest>();
        return String(request.headers["x-account"]);
      },
    });
    expectTypeOf(plugin).parameter(0).toEqualTypeOf<FastifyInstance>();
  });

  it("takes the harness's ToolContext as ctx, and a plain object as body", () => {
    expectTypeOf<ToolContext>().toMatchTypeOf<Parameters<IdempotentFetch>[2]>();
    expectTypeOf(idempotentFetch).returns.resolves.toEqualTypeOf<Response>();
    expectTypeOf(idempotentFetch).toBeCallableWith(
      "http://x",
      { method: "POST", body: { a: 1 } },
      {
        idempotencyKey: "k",
      },
    );
    // Checked by the compiler only, never run.
    const typeOnly = () => {
      // @ts-expect-error the key comes from the harness; a context without one is refused
      idempotentFetch("http://x", {}, { signal: new AbortController().signal });
      // @ts-expect-error scope must name the caller with a string
      honoIdempotency({ store, scope: () => 42 });
      // @ts-expect-error scope has no default: name the caller, or say "single-tenant"
      expressIdempotency({ store });
      // @ts-expect-error the opt-out is spelled out, not any string
      fastifyIdempotency({ store, scope: "global" });
      honoIdempotency({ store, scope: "single-tenant" });
    };
    expectTypeOf(typeOnly).toBeFunction();
  });
});
