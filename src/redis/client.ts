import { createHash } from "node:crypto";
import { isClusterClient } from "./cluster.js";

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
  /** The function of the store's library that runs the same body (library.ts), when there is one. */
  fn?: string;
  /** The function writes nothing: called by FCALL_RO. */
  readOnly?: boolean;
}

/** A Redis 7 function library: its name and the code `FUNCTION LOAD` takes. */
export interface FunctionLibrary {
  name: string;
  code: string;
}

export const script = (source: string): Script => ({
  source,
  sha: createHash("sha1").update(source).digest("hex"),
});

/**
 * What idemkey calls on an ioredis client (`new Redis(...)` or a `Cluster`). The function commands are optional:
 * without them (or on a cluster) the store runs its scripts by EVALSHA.
 */
export interface IoRedisLike {
  evalsha(sha: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  eval(source: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  fcall?(fn: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  fcall_ro?(fn: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  function?(subcommand: "LOAD", replace: "REPLACE", code: string): Promise<unknown>;
}

/** What idemkey calls on a node-redis v4, v5 or v6 client (`createClient(...)`, connected). */
export interface NodeRedisLike {
  evalSha(sha: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  eval(source: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  fCall?(fn: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  fCallRo?(fn: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  functionLoad?(code: string, options: { REPLACE: boolean }): Promise<unknown>;
}

export type RedisClientLike = IoRedisLike | NodeRedisLike;

/** The commands a runner sends, in one shape for both clients. */
interface Commands {
  evalsha(sha: string, keys: string[], args: string[]): Promise<unknown>;
  eval(source: string, keys: string[], args: string[]): Promise<unknown>;
  /** Absent when the client has no function commands. */
  functions?: {
    fcall(fn: string, readOnly: boolean, keys: string[], args: string[]): Promise<unknown>;
    load(code: string): Promise<unknown>;
  };
}

/**
 * Wraps either client in one shape. node-redis names the commands `evalSha`, `fCall`, ioredis `evalsha`, `fcall`.
 * With a `library`, the scripts that have a function in it (`fn`) run as Redis 7 functions, loaded once (see
 * `runner`); the rest, and all of them where functions are unavailable, go by EVALSHA, falling back to EVAL (which
 * caches the script) when the server has not seen them yet or was restarted.
 */
export function scriptRunner(client: unknown, library?: FunctionLibrary): ScriptRunner {
  const c = client as Partial<IoRedisLike & NodeRedisLike> | null;
  // A cluster would need the library on every master, and again on each new one: its scripts go by EVALSHA, which
  // the client resends as EVAL to a node that lacks the script.
  const functionsOk = library !== undefined && !isClusterClient(client);
  if (typeof c?.evalSha === "function" && typeof c.eval === "function") {
    const node = c as NodeRedisLike;
    // Not part of the narrow shape (the clients' overloads of `set` differ too much to name): only a store made
    // with `indexes: false` needs it, and checks for it.
    const set = (c as { set?: (key: string, value: string, options: object) => Promise<unknown> }).set;
    const { fCall, fCallRo, functionLoad } = node;
    const commands: Commands = {
      evalsha: (sha, keys, args) => node.evalSha(sha, { keys, arguments: args }),
      eval: (source, keys, args) => node.eval(source, { keys, arguments: args }),
    };
    if (
      functionsOk &&
      typeof fCall === "function" &&
      typeof fCallRo === "function" &&
      typeof functionLoad === "function"
    ) {
      commands.functions = {
        fcall: (fn, readOnly, keys, args) =>
          (readOnly ? fCallRo : fCall).call(node, fn, { keys, arguments: args }),
        load: (code) => functionLoad.call(node, code, { REPLACE: true }),
      };
    }
    return {
      run: runner(commands, library),
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
    const { fcall, fcall_ro, function: fn } = io;
    const commands: Commands = {
      evalsha: (sha, keys, args) => io.evalsha(sha, keys.length, ...keys, ...args),
      eval: (source, keys, args) => io.eval(source, keys.length, ...keys, ...args),
    };
    if (
      functionsOk &&
      typeof fcall === "function" &&
      typeof fcall_ro === "function" &&
      typeof fn === "function"
    ) {
      commands.functions = {
        fcall: (name, readOnly, keys, args) =>
          (readOnly ? fcall_ro : fcall).call(io, name, keys.length, ...keys, ...args),
        load: (code) => fn.call(io, "LOAD", "REPLACE", code),
      };
    }
    return {
      run: runner(commands, library),
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

/**
 * What `FUNCTION LOAD` answers where this store cannot use functions: Redis before 7.0 (or a server without them)
 * knows no such command; an ACL may deny it (`NOPERM`). The store then runs its scripts by EVALSHA.
 */
const UNAVAILABLE = /^(?:ERR unknown command|ERR unknown subcommand|NOPERM)/i;

/** The server's answer to a command an ACL denies: refused before it ran. */
const DENIED = /^NOPERM/;

/** The server's answer for a function it does not have (restarted, or `FUNCTION FLUSH`): nothing ran. */
const NOT_FOUND = /^ERR Function not found/;

/**
 * Runs a script as its library function or by EVALSHA. Which one is decided once per store, at its first script
 * that has a function: `FUNCTION LOAD REPLACE` of the library; where that is unavailable (see UNAVAILABLE) every
 * script goes by EVALSHA from then on; any other failure (the server unreachable) decides nothing, and the next
 * script tries again. A function the server no longer has (`Function not found`) is loaded again and called once
 * more, and an FCALL an ACL denies (`NOPERM`) goes by EVALSHA from then on: both replies prove the call ran
 * nothing. No other failure is retried here.
 */
function runner(commands: Commands, library: FunctionLibrary | undefined): ScriptRunner["run"] {
  const byScript = (s: Script, keys: string[], args: string[]) =>
    withFallback(
      () => commands.evalsha(s.sha, keys, args),
      () => commands.eval(s.source, keys, args),
    );
  const functions = commands.functions;
  if (functions === undefined || library === undefined) return byScript;
  let decided: boolean | undefined;
  let deciding: Promise<void> | undefined;
  let reloading: Promise<unknown> | undefined;
  const reload = () => {
    reloading ??= functions.load(library.code).finally(() => {
      reloading = undefined;
    });
    return reloading;
  };
  const decide = () => {
    deciding ??= functions.load(library.code).then(
      () => {
        decided = true;
      },
      (error: unknown) => {
        deciding = undefined;
        if (!UNAVAILABLE.test(String((error as Error)?.message))) throw error;
        decided = false;
      },
    );
    return deciding;
  };
  const byFunction = (s: Script & { fn: string }, keys: string[], args: string[]) =>
    functions.fcall(s.fn, s.readOnly === true, keys, args).catch((error: unknown) => {
      const message = String((error as Error)?.message);
      // An ACL that lets FUNCTION LOAD through may still deny FCALL: refused before it ran, so EVALSHA from now on.
      if (DENIED.test(message)) {
        decided = false;
        return byScript(s, keys, args);
      }
      if (!NOT_FOUND.test(message)) throw error;
      return reload().then(() => functions.fcall(s.fn, s.readOnly === true, keys, args));
    });
  return (s, keys, args) => {
    if (s.fn === undefined || decided === false) return byScript(s, keys, args);
    if (decided) return byFunction(s as Script & { fn: string }, keys, args);
    return decide().then(() =>
      decided ? byFunction(s as Script & { fn: string }, keys, args) : byScript(s, keys, args),
    );
  };
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
