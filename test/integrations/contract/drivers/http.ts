import { once } from "node:events";
import express, { type NextFunction, type Request, type Response } from "express";
import Fastify from "fastify";
import { Hono } from "hono";
import {
  idempotency as expressIdempotency,
  keepRawBody,
  markNoEffect,
} from "../../../../src/express/index.js";
import { idempotency as fastifyIdempotency } from "../../../../src/fastify/index.js";
import { idempotency as honoIdempotency } from "../../../../src/hono/index.js";
import { idempotencyKey } from "../../../../src/index.js";
import { baseUrl, listen } from "../../../owner/apps.js";
import type { Driver, Instance } from "../driver.js";
import type { Seen, World } from "../world.js";

/**
 * The HTTP middleware as an owner: the route's handler is the tool's body (the world's owner behind it), and the
 * client sends every call with the Idempotency-Key of the call (the task, the tool, the arguments), as a client that
 * retries the same request does. Only the rows an owner takes part in run here; the owner's own table (concurrency,
 * fingerprints, takeovers, sizes) is test/owner/scenarios.ts.
 */
const cannot = {
  "crash after the effect":
    "the middleware's leases run on the real clock (it takes no clock), and an owner cannot know whether its handler " +
    "took effect: a takeover answers 409 outcome-unknown (test/owner/scenarios.ts)",
  "schema default":
    "the client sends the body: no schema of the owner's fills a field before the key is read",
  "non-JSON result": "a response body is bytes: the handler serializes its own answer",
  "abort while running":
    "a client hanging up is the server's socket closing, which an in-process request has not",
  "failing telemetry hook": "the middleware has no event hook for the world's throwing one to attach to",
  approval: "an HTTP owner has no approval step",
} as const;

const notModelFacing = "an HTTP owner answers the client's code with a status and a body";

/** A response, as the client reads it. */
interface Answered {
  status: number;
  text: string;
}

/**
 * What the client knows of an answer: a 2xx is the value; `409 outcome-unknown`, and any 5xx to a POST (the handler
 * failed, and the client cannot tell before or after its effect), is an unknown outcome; anything else an error.
 */
function seenOf({ status, text }: Answered): Seen {
  if (status >= 200 && status < 300) return { text };
  const unknown = status >= 500 || (status === 409 && text.includes("outcome-unknown"));
  const error = Object.assign(new Error(text), {
    name: unknown ? "OutcomeUnknownError" : "HttpError",
    status,
  });
  return { text, error };
}

/** The route's handler: the world's owner, with the request's key when the downstream is keyed. */
async function handle(world: World, key: string | undefined, noEffect: () => void): Promise<Answered> {
  try {
    const value = await world.owner.act(world.spec.effect === "keyed" ? key : undefined);
    return { status: 200, text: JSON.stringify(value) };
  } catch (error) {
    if (world.spec.noEffect?.(error) !== true) throw error;
    noEffect();
    return { status: 402, text: (error as Error).message };
  }
}

const headersOf = (world: World, args: object) => ({
  "content-type": "application/json",
  "idempotency-key": idempotencyKey(world.taskId, world.spec.name, args),
});

/** The world's store, and a quiet onError: the rows' failures are expected and checked. */
const optionsOf = (world: World) => ({
  store: world.store(),
  scope: "single-tenant" as const,
  onError: () => {},
});

function httpDriver(name: string, open: (world: World) => Promise<Instance>): Driver {
  return { name, cannot, notModelFacing, open };
}

export const honoDriver = httpDriver("idempotency() (Hono, app.request)", async (world) => {
  const app = new Hono();
  app.use("*", honoIdempotency(optionsOf(world)));
  app.onError((error, c) => c.text(error.message, 500));
  app.post("/refunds", async (c) => {
    const answer = await handle(world, c.req.header("idempotency-key"), () => markNoEffect(c));
    return c.body(answer.text, answer.status as 200);
  });
  return {
    async call(args) {
      const res = await app.request("/refunds", {
        method: "POST",
        headers: headersOf(world, args),
        body: JSON.stringify(args),
      });
      return seenOf({ status: res.status, text: await res.text() });
    },
  };
});

export const fastifyDriver = httpDriver("idempotency() (Fastify, inject)", async (world) => {
  const app = Fastify({ logger: false });
  await app.register(fastifyIdempotency(optionsOf(world)));
  app.post("/refunds", async (request, reply) => {
    const key = request.headers["idempotency-key"] as string | undefined;
    const answer = await handle(world, key, () => markNoEffect(reply));
    reply.code(answer.status);
    return answer.text;
  });
  await app.ready();
  return {
    async call(args) {
      const res = await app.inject({
        method: "POST",
        url: "/refunds",
        headers: headersOf(world, args),
        payload: JSON.stringify(args),
      });
      return seenOf({ status: res.statusCode, text: res.body });
    },
    close: () => app.close(),
  };
});

export const expressDriver = httpDriver("idempotency() (Express, a real listener)", async (world) => {
  const app = express();
  app.use(express.json({ verify: keepRawBody }));
  app.use(expressIdempotency(optionsOf(world)));
  app.post("/refunds", async (req, res, next) => {
    try {
      const answer = await handle(world, req.get("idempotency-key"), () => markNoEffect(res));
      res.status(answer.status).send(answer.text);
    } catch (error) {
      next(error);
    }
  });
  app.use((error: Error, _req: Request, res: Response, _next: NextFunction) => {
    res.status(500).send(error.message);
  });
  const server = await listen(app);
  return {
    async call(args) {
      const res = await fetch(`${baseUrl(server)}/refunds`, {
        method: "POST",
        headers: headersOf(world, args),
        body: JSON.stringify(args),
      });
      return seenOf({ status: res.status, text: await res.text() });
    },
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, "close");
    },
  };
});
