import type { PageConfig } from "../../views.js";

/** What the page keeps across views: the token actions (and the live stream) send, and the inspector's config. */
export const session: { token: string; config: PageConfig | null } = { token: "", config: null };

/** A problem+json answer, as thrown by `api`. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly problem: { type?: string; title?: string; detail?: string },
  ) {
    super(message);
  }
}

export function headers(extra: Record<string, string> = {}): Record<string, string> {
  const h: Record<string, string> = { accept: "application/json", ...extra };
  if (session.token) h["x-idemkey-token"] = session.token;
  return h;
}

/** A JSON request to the inspector's own API; `T` is the view model the endpoint answers with. */
export async function api<T>(path: string, options: { method?: string; body?: object } = {}): Promise<T> {
  const res = await fetch(path, {
    method: options.method ?? "GET",
    headers: headers(options.body ? { "content-type": "application/json" } : {}),
    body: options.body ? JSON.stringify(options.body) : null,
    cache: "no-store",
    credentials: "omit",
  });
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = { detail: text };
  }
  if (!res.ok) {
    const problem = (body ?? {}) as ApiError["problem"];
    throw new ApiError(problem.detail || problem.title || `HTTP ${res.status}`, res.status, problem);
  }
  return body as T;
}

export function needToken(err: unknown): boolean {
  const slug =
    err instanceof ApiError
      ? String(err.problem.type ?? "")
          .split("/")
          .pop()
      : undefined;
  return slug === "token-required" || slug === "token-invalid";
}

/** For a panel whose call or task went away (expired, purged): show nothing instead of failing the refresh. */
export function gone(err: unknown): null {
  if (err instanceof ApiError && err.status === 404) return null;
  throw err;
}
