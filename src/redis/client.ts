import { createHash } from "node:crypto";

/** The narrow shape the store needs from either client: run a Lua script. */
export interface ScriptRunner {
  run(script: Script, keys: string[], args: string[]): Promise<unknown>;
  /**
   * `SET key value PX px NX GET` (Redis 7.0 or later): null when it created the key, else the value there, left as
   * it was. Only the store without indexes calls it; `undefined` when the client has no `set`.
   */
  setNew?: (key: string, value: string, px: number) => Promise<string | null>;
}

export interface Script {
  source: string;
  sha: string;
}

export const script = (source: string): Script => ({
  source,
  sha: createHash("sha1").update(source).digest("hex"),
});

/** What idemkey calls on an ioredis client (`new Redis(...)` or a `Cluster`). */
export interface IoRedisLike {
  evalsha(sha: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  eval(source: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
}

/** What idemkey calls on a node-redis v4, v5 or v6 client (`createClient(...)`, connected). */
export interface NodeRedisLike {
  evalSha(sha: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  eval(source: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
}

export type RedisClientLike = IoRedisLike | NodeRedisLike;

/**
 * Wraps either client in one shape. node-redis names the command `evalSha`, ioredis `evalsha`; scripts go by
 * EVALSHA, falling back to EVAL (which caches the script) when the server has not seen them yet or was restarted.
 */
export function scriptRunner(client: unknown): ScriptRunner {
  const c = client as Partial<IoRedisLike & NodeRedisLike> | null;
  if (typeof c?.evalSha === "function" && typeof c.eval === "function") {
    const node = c as NodeRedisLike;
    // Not part of the narrow shape (the clients' overloads of `set` differ too much to name): only a store made
    // with `indexes: false` needs it, and checks for it.
    const set = (c as { set?: (key: string, value: string, options: object) => Promise<unknown> }).set;
    return {
      run: (s, keys, args) =>
        withFallback(
          () => node.evalSha(s.sha, { keys, arguments: args }),
          () => node.eval(s.source, { keys, arguments: args }),
        ),
      setNew:
        typeof set === "function"
          ? (key, value, px) =>
              set.call(node, key, value, { PX: px, NX: true, GET: true }) as Promise<string | null>
          : undefined,
    };
  }
  if (typeof c?.evalsha === "function" && typeof c.eval === "function") {
    const io = c as IoRedisLike;
    const set = (
      c as { set?: (key: string, value: string, ...options: (string | number)[]) => Promise<unknown> }
    ).set;
    return {
      run: (s, keys, args) =>
        withFallback(
          () => io.evalsha(s.sha, keys.length, ...keys, ...args),
          () => io.eval(s.source, keys.length, ...keys, ...args),
        ),
      setNew:
        typeof set === "function"
          ? (key, value, px) => set.call(io, key, value, "PX", px, "NX", "GET") as Promise<string | null>
          : undefined,
    };
  }
  throw new TypeError(
    "redisStore: client must be an ioredis client or a connected node-redis (redis) client",
  );
}

async function withFallback(
  bySha: () => Promise<unknown>,
  bySource: () => Promise<unknown>,
): Promise<unknown> {
  try {
    return await bySha();
  } catch (error) {
    // ioredis Cluster wraps it ("Too many Cluster redirections. Last error: ReplyError: NOSCRIPT ...") when an ASK
    // during a reshard sent the script to a node that has not seen it.
    if (
      /^(?:Too many Cluster redirections\. Last error: (?:ReplyError: )?)?NOSCRIPT/.test(
        String((error as Error)?.message),
      )
    )
      return bySource();
    throw error;
  }
}
