import type { IncomingMessage, ServerResponse } from "node:http";
import { isToken } from "../options/token.js";
import { idempotencyEngine } from "../owner/engine.js";
import { keyFieldsOf } from "../owner/node-headers.js";
import { type IdempotencyOptions, SINGLE_TENANT } from "../owner/options.js";
import type { OwnerResponse } from "../owner/problem.js";
import { certificateScope, checkTls, listen, refusedUncertified, type TlsOptions } from "./tls.js";

/** A running HTTP gateway. */
export interface HttpGateway {
  /** The address it listens on, such as `http://127.0.0.1:8080`. */
  readonly url: string;
  close(): Promise<void>;
}

export interface HttpGatewayOptions extends Omit<IdempotencyOptions<IncomingMessage>, "scope">, TlsOptions {
  /** The HTTP API the gateway fronts: requests go to this origin with their path and query. */
  upstream: string;
  /**
   * The request header that names the caller (an API key, a tenant id), so that one caller can never replay or
   * block another's request. Without it every caller shares one scope: right only when one client talks to it.
   * @example scopeHeader: "x-api-key"
   */
  scopeHeader?: string;
  /**
   * The request methods the gateway covers: a request of one of them with an `Idempotency-Key` is forwarded once and
   * its answer replayed. Any other method passes through untouched, key or not. Unlike the middleware's (POST and
   * PATCH), the default is every method that is not safe (RFC 9110 9.2.1), since a gateway fronts a whole API.
   * Names are case-insensitive.
   * @default ["POST", "PATCH", "PUT", "DELETE"]
   * @example methods: ["POST"]
   */
  methods?: readonly string[];
  /**
   * Whether a covered request without an `Idempotency-Key` is refused (`400`, problem `key-missing`) and not
   * forwarded. Unlike the middleware's, the default is `false`: put in front of an API its clients already use, the
   * gateway passes their keyless requests through untouched, unprotected, as before it was there. A malformed key is
   * refused either way.
   * @default false
   */
  required?: boolean;
  /** @default "127.0.0.1" */
  host?: string;
  /** @default 0 (a free port) */
  port?: number;
}

/** The methods a gateway covers by default: those that are not safe (RFC 9110 9.2.1). */
const GATEWAY_METHODS = ["POST", "PATCH", "PUT", "DELETE"] as const;

// Hop-by-hop fields (RFC 9110 7.6.1) and the ones fetch sets itself.
const DROPPED = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  "host",
  "content-length",
]);

/**
 * A reverse proxy with the owner engine (`idempotencyEngine`, the middleware's semantics) in front of any HTTP API:
 * a request of a covered method (`methods`: POST, PATCH, PUT and DELETE by default) with an `Idempotency-Key` is
 * forwarded once; the upstream's answer, whatever its status, is recorded and replayed (`idempotent-replayed:
 * true`); a retry while it runs is answered `409 key-in-flight`, another body with the same key `422 key-reused`; an
 * upstream whose connection fails after the request was sent leaves the key `outcome_unknown` (`502`, then
 * `409 outcome-unknown` to every retry), never sent again. A refused connection sent nothing, so it releases the key.
 * Requests without a key pass through untouched (with `required`, a covered one is answered `400 key-missing`), and
 * so do the methods not covered, key or not.
 *
 * @example
 * const gateway = await httpGateway({ upstream: "http://127.0.0.1:8000", store, scopeHeader: "x-api-key", port: 8080 });
 */
export async function httpGateway(options: HttpGatewayOptions): Promise<HttpGateway> {
  if (typeof options !== "object" || options === null) throw new TypeError("options must be an object");
  let upstream: URL;
  try {
    upstream = new URL(options.upstream);
  } catch {
    throw new TypeError(
      `options.upstream must be an http:// or https:// URL, got ${String(options.upstream)}`,
    );
  }
  if (upstream.protocol !== "http:" && upstream.protocol !== "https:") {
    throw new TypeError(`options.upstream must be an http:// or https:// URL, got ${options.upstream}`);
  }
  const {
    scopeHeader,
    scopeMtls,
    tls,
    host = "127.0.0.1",
    port = 0,
    upstream: _u,
    methods = GATEWAY_METHODS,
    required = false,
    ...engineOptions
  } = options;
  if (scopeHeader !== undefined && !isToken(scopeHeader)) {
    throw new TypeError(`options.scopeHeader must be a header name, got ${String(scopeHeader)}`);
  }
  checkTls(tls, scopeMtls, scopeHeader);
  const header = scopeHeader?.toLowerCase();
  const engine = idempotencyEngine<IncomingMessage>({
    ...engineOptions,
    methods,
    required,
    scope:
      scopeMtls !== undefined
        ? (req) => certificateScope(req, scopeMtls)
        : header === undefined
          ? SINGLE_TENANT
          : (req) => String(req.headers[header] ?? ""),
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (refusedUncertified(req, res, tls)) return;
    let body: Buffer | undefined;
    const decision = await engine.begin({
      method: req.method ?? "GET",
      target: req.url ?? "/",
      keyFields: keyFieldsOf(req),
      contentType: req.headers["content-type"],
      contentLength: req.headers["content-length"],
      body: async (limit) => {
        const read = await readLimited(req, limit);
        if ("tooLarge" in read) return read;
        body = read.bytes;
        return read;
      },
      request: req,
    });
    if (decision.action === "respond") return send(res, decision.response);
    body ??= await readAll(req);
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (DROPPED.has(name) || value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
    }
    const method = req.method ?? "GET";
    let answer: { status: number; headers: [string, string][]; body: Uint8Array };
    try {
      const response = await fetch(new URL(req.url ?? "/", upstream), {
        method,
        headers,
        redirect: "manual",
        ...(method === "GET" || method === "HEAD" ? {} : { body }),
      });
      const bytes = new Uint8Array(await response.arrayBuffer());
      const pairs: [string, string][] = [];
      response.headers.forEach((value, name) => {
        if (!DROPPED.has(name) && name !== "content-encoding") pairs.push([name, value]);
      });
      answer = { status: response.status, headers: pairs, body: bytes };
    } catch (error) {
      // A refused connection never carried the request: the owner's side of "nothing happened". Any other
      // failure (a reset, a timeout, a lost answer) may follow the effect.
      const refused = causeCode(error) === "ECONNREFUSED";
      const problem = Buffer.from(
        JSON.stringify({
          type: refused ? "about:blank" : "https://idemkey.dev/problems/outcome-unknown",
          title: refused ? "Upstream unreachable" : "Upstream failed while processing the request",
          status: 502,
          detail: refused
            ? "The upstream refused the connection; the request was not sent. Retry it with the same key."
            : "The upstream's connection failed after the request was sent: it may or may not have taken effect, " +
              "so it will not be sent again with this key. Check whether it took effect.",
        }),
      );
      answer = { status: 502, headers: [["content-type", "application/problem+json"]], body: problem };
      if (decision.action === "run") {
        await decision.lock.finish({ ...answer, threw: true, error, noEffect: refused });
      }
      return send(res, answer);
    }
    if (decision.action === "run") {
      await decision.lock.finish({ ...answer, body: answer.body, threw: false });
    }
    send(res, answer);
  }

  const listener = (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) {
        res.statusCode = 500;
        res.setHeader("content-type", "application/problem+json");
        res.end(
          JSON.stringify({ type: "about:blank", title: "Gateway error", status: 500, detail: String(error) }),
        );
      } else res.destroy();
    });
  };
  const server = await listen(listener, { tls, host, port });
  return { url: server.origin, close: server.close };
}

function causeCode(error: unknown): string | undefined {
  const cause = (error as { cause?: { code?: string } } | undefined)?.cause;
  return cause?.code;
}

function send(res: ServerResponse, response: OwnerResponse): void {
  res.statusCode = response.status;
  for (const [name, value] of response.headers) res.appendHeader(name, value);
  res.end(Buffer.from(response.body.buffer, response.body.byteOffset, response.body.byteLength));
}

function readAll(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function readLimited(req: IncomingMessage, limit: number): Promise<{ bytes: Buffer } | { tooLarge: true }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    const onData = (chunk: Buffer) => {
      total += chunk.byteLength;
      if (total <= limit) return void chunks.push(chunk);
      req.off("data", onData);
      req.resume();
      resolve({ tooLarge: true });
    };
    req.on("data", onData);
    req.on("end", () => resolve({ bytes: Buffer.concat(chunks, total) }));
    req.on("error", reject);
  });
}
