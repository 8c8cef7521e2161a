import type { ReconcileResult, ToolContext } from "../harness/types.js";
import { describe } from "../options/describe.js";
import type { LookupAnswer } from "../owner/lookup.js";

type Completed = Extract<LookupAnswer, { state: "completed" }>;
/** What `new Headers(...)` takes (the DOM lib's `HeaderInit`, which this package does not load). */
type HeaderInit = ConstructorParameters<typeof Headers>[0];

export interface LookupReconcileOptions<A, R> {
  /**
   * The owner's lookup URL: where its middleware's `lookup` option answers (`https://api.example.com/v1/idempotency-keys`),
   * or a function of the call's arguments for a tool that talks to several owners.
   */
  url: string | URL | ((args: A, ctx: ToolContext) => string | URL);
  /**
   * Headers sent with the lookup: the same credentials the call itself sends, since the owner answers only about the
   * calling scope's keys (another scope's key reads as `unknown`, as if never sent: a wrong credential would make a
   * call that happened look as though it did not).
   * @default none
   */
  headers?: HeaderInit | ((args: A, ctx: ToolContext) => HeaderInit | Promise<HeaderInit>);
  /**
   * The tool's result from the owner's record of the original response, when it ran. Return `undefined` to leave
   * the outcome undecided (for a person).
   * @default a 2xx response's body parsed as JSON (its text when it is not JSON); any other status: undecided
   */
  result?: (answer: Completed, args: A) => R | undefined;
  /** Sends the key quoted, as `idempotentFetch`'s `quoted`. @default true */
  quoted?: boolean;
  /** The `fetch` to use. @default globalThis.fetch, looked up on each call */
  fetch?: (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
}

/**
 * A ready `reconcile` for a tool whose owner runs idemkey's middleware with `lookup`: asks the owner whether it ran
 * the call's key. `completed`: done, with the recorded response as the result; `unknown` (the owner never saw the
 * key in this caller's scope): not done; `in_flight` or `outcome_unknown`: it cannot tell (yet). A lookup that fails
 * (the owner is down, answers an error) throws, which leaves the outcome unknown.
 *
 * @example
 * const charge = defineTool({ name: "charge", effect: "unguarded", run: ...,
 *   reconcile: lookupReconcile({ url: "https://pay.example.com/v1/idempotency-keys", headers: { authorization } }) });
 */
export function lookupReconcile<A, R>(
  options: LookupReconcileOptions<A, R>,
): (args: A, ctx: ToolContext) => Promise<ReconcileResult<R>> {
  if (typeof options !== "object" || options === null) {
    throw new TypeError(`lookupReconcile: options must be an object, got ${describe(options)}`);
  }
  const { url, headers, result, fetch: fetchImpl } = options;
  const quoted = options.quoted ?? true;
  if (typeof url !== "function" && !(url instanceof URL) && (typeof url !== "string" || !URL.canParse(url))) {
    throw new TypeError(
      `lookupReconcile: options.url must be an absolute URL or a function, got ${describe(url)}`,
    );
  }
  if (
    headers !== undefined &&
    (typeof headers !== "object" || headers === null) &&
    typeof headers !== "function"
  ) {
    throw new TypeError(
      `lookupReconcile: options.headers must be headers or a function, got ${describe(headers)}`,
    );
  }
  if (result !== undefined && typeof result !== "function") {
    throw new TypeError(`lookupReconcile: options.result must be a function, got ${describe(result)}`);
  }
  if (typeof quoted !== "boolean") {
    throw new TypeError(`lookupReconcile: options.quoted must be a boolean, got ${describe(quoted)}`);
  }
  if (fetchImpl !== undefined && typeof fetchImpl !== "function") {
    throw new TypeError(`lookupReconcile: options.fetch must be a function, got ${describe(fetchImpl)}`);
  }
  const toResult = result ?? defaultResult<R>;

  return async function lookupReconcile(args, ctx) {
    const target = typeof url === "function" ? url(args, ctx) : url;
    const sent = new Headers(typeof headers === "function" ? await headers(args, ctx) : headers);
    const key = ctx.idempotencyKey;
    sent.set("idempotency-key", quoted ? `"${key.replace(/[\\"]/g, "\\$&")}"` : key);
    sent.set("accept", "application/json");
    const response = await (fetchImpl ?? globalThis.fetch)(target, {
      method: "GET",
      headers: sent,
      signal: ctx.signal,
    });
    if (response.status !== 200) {
      const text = await response.text().catch(() => "");
      throw new Error(`the owner's key lookup answered ${response.status}: ${text.slice(0, 200)}`);
    }
    const answer = (await response.json()) as LookupAnswer;
    if (answer.key !== key) {
      throw new Error(`the owner's key lookup answered about another key (${JSON.stringify(answer.key)})`);
    }
    if (answer.state === "unknown") return { status: "not_done", evidence: { lookup: "unknown" } };
    if (answer.state !== "completed") return undefined;
    const value = toResult(answer, args);
    if (value === undefined) return undefined;
    return { status: "done", result: value, evidence: { lookup: "completed", status: answer.status } };
  };
}

function defaultResult<R>(answer: Completed): R | undefined {
  if (answer.status < 200 || answer.status > 299) return undefined;
  if (answer.body === undefined) return undefined;
  try {
    return JSON.parse(answer.body) as R;
  } catch {
    return answer.body as R;
  }
}
