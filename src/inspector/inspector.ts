import type { IncomingMessage, ServerResponse } from "node:http";
import { CanonicalizationError } from "../errors/canonicalization-error.js";
import { LedgerStateError } from "../errors/ledger-state-error.js";
import { StoreError } from "../errors/store-error.js";
import { createHarness } from "../harness/create-harness.js";
import { PREFIX } from "../harness/ledger.js";
import { checkHost, checkSameOrigin, checkToken, TOKEN_HEADER } from "./guard.js";
import { keyedId } from "./keyed-id.js";
import { int, readListQuery } from "./list-query.js";
import { checkName, type InspectorOptions, resolveInspectorOptions } from "./options.js";
import { KEY_KINDS, type KeyKind, type KeyView, listKeys } from "./owner-keys.js";
import { PAGE_CSS, PAGE_HTML, PAGE_JS } from "./page/index.js";
import { redactor } from "./redact.js";
import { BodyError, Problem, readJson, send, sendJson, sendProblem } from "./respond.js";
import { scanner, toRow } from "./snapshot.js";
import { changeStream } from "./stream.js";
import { counts, detail, listCalls, listTasks, type PageConfig, STATES, timeline } from "./views.js";

export interface Inspector {
  /** The token actions need in the `x-idemkey-token` header (the one given, or the generated one). */
  readonly token: string;
  /** The `node:http` request listener serving the page and its API. */
  handle(req: IncomingMessage, res: ServerResponse): void;
  /** Ends the live streams and stops polling; the store stays open (it is the caller's). */
  close(): void;
}

/** Data endpoints answer from a ledger read at most this old, so that a page's burst of requests reads it once. */
const FRESH_MS = 250;
/** The largest action body: a resolve's result. */
const BODY_LIMIT = 1024 * 1024;
const KEY = /^[0-9a-f]{64}$/;

/**
 * The ledger inspector: a small web page, and the JSON API it reads, over the ledger in `store`. It lists every
 * keyed call with its state, attempts, lease and times, draws a timeline per task, and lets a person approve or
 * deny a parked call and resolve an unknown outcome through the harness's own `approve`, `deny` and `resolve`,
 * recorded with who did it. `/api/keys` lists the owner's keys in the same store, the ones the HTTP middleware,
 * `mcpDedupe` and the gateway (`idemkey gateway`) write, alike: scope, key, state, tool or method and target, and
 * the recorded answer. Serve it with `node:http` (or `serveInspector`) on loopback.
 *
 * @example
 * const inspector = createInspector({ store: sqliteStore("./ledger.db") });
 * http.createServer(inspector.handle).listen(8080, "127.0.0.1");
 */
export function createInspector(options: InspectorOptions): Inspector {
  const o = resolveInspectorOptions(options);
  const harness = createHarness({
    store: o.store,
    retentionMs: o.retentionMs,
    clock: o.clock,
    onEvent: o.onEvent,
  });
  // One redaction for every string the inspector shows, and one secret for every id it derives from one it hides.
  const redact = redactor(o.redact);
  const id = keyedId(o.secret);
  const keyView: KeyView = { redact, maskScope: o.redact.length > 0, id };
  const scan = scanner(o.store, o.maxRecords, o.clock, id);
  const stream = changeStream(scan, o.pollMs, o.maxStreams, redact);
  // Every answer passes through the redaction on its way out, whatever built it; the views mask as they build
  // too, so that filters match what is shown.
  const json = (res: ServerResponse, body: unknown) => sendJson(res, redact.strings(body));
  const problem = (
    res: ServerResponse,
    kind: Problem,
    text: string,
    extra: Record<string, unknown> = {},
    headers: Record<string, string> = {},
  ) => sendProblem(res, kind, redact.text(text), redact.strings(extra), headers);

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://inspector");
    const path = url.pathname;
    const method = req.method ?? "GET";
    const hostRefusal = checkHost(req, o.remote);
    if (hostRefusal) return problem(res, hostRefusal.problem, hostRefusal.detail);

    if (!path.startsWith("/api/")) {
      if (method !== "GET") return notAllowed(res, "GET");
      const asset = ASSETS[path];
      if (asset === undefined) return problem(res, Problem.notFound, `Nothing at ${path}`);
      return send(res, 200, asset[0], asset[1], path === "/" ? { "content-security-policy": CSP } : {});
    }

    const action = /^\/api\/calls\/([^/]+)\/(approve|deny|resolve)$/.exec(path);
    if (action) {
      if (method !== "POST") return notAllowed(res, "POST");
      return act(req, res, action[1]!, action[2] as "approve" | "deny" | "resolve");
    }
    if (method !== "GET") return notAllowed(res, "GET");
    if (o.remote) {
      const refusal = checkToken(req, o.token);
      if (refusal) return problem(res, refusal.problem, refusal.detail);
    }
    const q = url.searchParams;
    if (path === "/api/config") {
      const config: PageConfig = {
        label: o.label,
        readOnly: o.readOnly,
        user: o.user,
        redact: o.redact,
        tokenHeader: TOKEN_HEADER,
        pollMs: o.pollMs,
        states: STATES,
      };
      return json(res, config);
    }
    if (path === "/api/stream") {
      // Even on loopback: any site the browser visits can open a plain GET to 127.0.0.1, and each stream holds a
      // socket and costs a write per change. A custom header cannot be sent cross-site without a preflight, which
      // the inspector never answers.
      const refusal = o.remote ? undefined : checkToken(req, o.token);
      if (refusal) return problem(res, refusal.problem, refusal.detail);
      return stream.add(res);
    }
    if (path === "/api/counts") return json(res, counts(await scan.latest(FRESH_MS), redact));
    if (path === "/api/calls") {
      const list = readListQuery(q);
      if ("param" in list) return problem(res, Problem.badRequest, list.detail, { param: list.param });
      const { state, offset, limit } = list;
      const filter = {
        ...(q.get("task") ? { task: q.get("task")! } : {}),
        ...(q.get("tool") ? { tool: q.get("tool")! } : {}),
        ...(state ? { state } : {}),
      };
      return json(res, listCalls(await scan.latest(FRESH_MS), filter, offset, limit, redact));
    }
    if (path === "/api/keys") {
      // The owner's keys (the middleware's, mcpDedupe's, the gateway's and idempotentExecutor's records), listed alike.
      const list = readListQuery(q);
      if ("param" in list) return problem(res, Problem.badRequest, list.detail, { param: list.param });
      const { state, offset, limit } = list;
      const kind = q.get("kind") || undefined;
      if (kind !== undefined && !KEY_KINDS.includes(kind as KeyKind)) {
        return problem(
          res,
          Problem.badRequest,
          `kind must be ${KEY_KINDS.join(", ").replace(/, (\w+)$/, " or $1")}`,
          {
            param: "kind",
          },
        );
      }
      const scopeId = q.get("scopeId") || undefined;
      if (scopeId !== undefined && !/^[0-9a-f]{12}$/.test(scopeId)) {
        return problem(res, Problem.badRequest, "scopeId must be the 12 hex digits a key's scopeId shows", {
          param: "scopeId",
        });
      }
      // Filters match the rows as shown: a masked scope shows as [redacted] whatever it is, so a guess of it
      // answers as any other does; scopeId (keyed) picks one caller's keys.
      const filter = {
        ...(kind ? { kind: kind as KeyKind } : {}),
        ...(state ? { state } : {}),
        ...(q.has("scope") ? { scope: q.get("scope")! } : {}),
        ...(scopeId ? { scopeId } : {}),
      };
      return json(res, await listKeys(o.store, keyView, filter, offset, limit, o.maxRecords));
    }
    if (path === "/api/tasks") {
      const limit = int(q.get("limit"), 200, 1, 10_000);
      if (limit === undefined)
        return problem(res, Problem.badRequest, "limit must be 1 to 10000", { param: "limit" });
      return json(res, listTasks(await scan.latest(FRESH_MS), limit, redact));
    }
    const call = /^\/api\/calls\/([^/]+)$/.exec(path);
    if (call) {
      const key = decode(call[1]!);
      const record = key !== undefined && KEY.test(key) ? await o.store.get(PREFIX + key) : undefined;
      const row = record && toRow(record, id);
      if (!row) {
        return problem(res, Problem.notFound, `No live ledger call has the key ${call[1]}`, {
          key: call[1],
        });
      }
      return json(res, detail(row, redact, scan.observations(row.entry.key)));
    }
    const task = /^\/api\/tasks\/([^/]+)\/timeline$/.exec(path);
    if (task) {
      const taskId = decode(task[1]!);
      if (taskId === undefined)
        return problem(res, Problem.badRequest, "The task id is not valid URL encoding");
      const data = timeline(await scan.latest(FRESH_MS), taskId, scan.observations, o.clock(), redact);
      if (data.calls.length === 0) {
        return problem(res, Problem.notFound, `No live ledger call belongs to the task ${taskId}`, {
          taskId,
        });
      }
      return json(res, data);
    }
    return problem(res, Problem.notFound, `No endpoint at ${path}`);
  }

  async function act(
    req: IncomingMessage,
    res: ServerResponse,
    rawKey: string,
    verb: "approve" | "deny" | "resolve",
  ) {
    if (o.readOnly) {
      return problem(
        res,
        Problem.readOnly,
        "This inspector was started with --read-only: it takes no actions",
      );
    }
    const refusal = checkSameOrigin(req) ?? checkToken(req, o.token);
    if (refusal) return problem(res, refusal.problem, refusal.detail, {}, { connection: "close" });
    const key = decode(rawKey) ?? rawKey;
    if (!KEY.test(key)) return problem(res, Problem.notFound, `${key} is not an idempotency key`, { key });
    const body = await readJson(req, BODY_LIMIT);
    const by = body.by === undefined || body.by === "" ? o.user : checkName("by", body.by);
    let entry: Awaited<ReturnType<typeof harness.approve>>;
    if (verb === "approve") entry = await harness.approve(key, { by });
    else if (verb === "deny") {
      if (typeof body.reason !== "string" || body.reason.trim() === "" || body.reason.length > 1000) {
        throw new TypeError("reason must be a non-empty string of at most 1000 characters");
      }
      entry = await harness.deny(key, body.reason.trim(), { by });
    } else {
      const retry = body.retry === true;
      if (retry === "result" in body)
        throw new TypeError('send either { "result": <JSON> } or { "retry": true }');
      entry = await harness.resolve(key, retry ? { retry: true } : { result: body.result }, { by });
    }
    scan.invalidate();
    const record = await o.store.get(PREFIX + key);
    const row = record && toRow(record, id);
    json(res, {
      ok: true,
      action: verb,
      by,
      state: entry.state,
      call: row ? detail(row, redact, scan.observations(key)) : null,
    });
  }

  return {
    token: o.token,
    handle(req, res) {
      route(req, res).catch((error: unknown) => {
        if (error instanceof BodyError)
          return problem(res, error.problem, error.message, {}, { connection: "close" });
        if (error instanceof LedgerStateError) {
          return problem(res, Problem.wrongState, error.message, {
            key: error.key,
            state: error.state ?? null,
          });
        }
        if (error instanceof TypeError || error instanceof CanonicalizationError) {
          return problem(res, Problem.badRequest, error.message);
        }
        const message = (error as Error)?.message || String(error);
        const code = String((error as { code?: unknown })?.code ?? "");
        if (error instanceof StoreError || code.startsWith("SQLITE_")) {
          return problem(res, Problem.storeUnavailable, message);
        }
        return problem(res, Problem.internal, message);
      });
    },
    close: () => stream.close(),
  };
}

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const ASSETS: Record<string, [string, string]> = {
  "/": ["text/html; charset=utf-8", PAGE_HTML],
  "/app.js": ["text/javascript; charset=utf-8", PAGE_JS],
  "/app.css": ["text/css; charset=utf-8", PAGE_CSS],
};

function notAllowed(res: ServerResponse, allow: string): void {
  sendProblem(res, Problem.methodNotAllowed, `Use ${allow} here`, {}, { allow });
}

function decode(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}
