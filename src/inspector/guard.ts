import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { Problem } from "./respond.js";

/** The request header that carries the token: a custom header, so a cross-site page cannot send it unasked. */
export const TOKEN_HEADER = "x-idemkey-token";

export type Refusal = { problem: Problem; detail: string } | undefined;

/**
 * Refuses a request whose Host is not a loopback name, when the inspector serves loopback only: a page on another
 * site that resolves its own name to 127.0.0.1 (DNS rebinding) could otherwise read the ledger as same-origin.
 */
export function checkHost(req: IncomingMessage, remote: boolean): Refusal {
  if (remote) return undefined;
  const host = req.headers.host ?? "";
  const name = host.startsWith("[") ? host.slice(0, host.indexOf("]") + 1) : host.split(":")[0]!;
  if (name === "localhost" || name === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name))
    return undefined;
  return {
    problem: Problem.hostRefused,
    detail: `Host ${JSON.stringify(host)} is not a loopback address; open the URL the inspector printed`,
  };
}

/** Checks the token header in constant time. */
export function checkToken(req: IncomingMessage, token: string): Refusal {
  const given = req.headers[TOKEN_HEADER];
  if (typeof given !== "string" || given === "") {
    return {
      problem: Problem.tokenRequired,
      detail: `Send the token the inspector printed at start-up in the ${TOKEN_HEADER} header`,
    };
  }
  const digest = (text: string) => createHash("sha256").update(text).digest();
  if (!timingSafeEqual(digest(given), digest(token))) {
    return {
      problem: Problem.tokenInvalid,
      detail: `The ${TOKEN_HEADER} header does not hold the inspector's token`,
    };
  }
  return undefined;
}

/**
 * Refuses what a browser sends on another site's behalf: a fetch or form from another origin (by `Sec-Fetch-Site`
 * and `Origin`), and any body that is not JSON, which is what a plain HTML form can send without a CORS preflight.
 * The inspector answers no preflight, so a cross-origin JSON request or one with the token header never leaves the
 * browser either.
 */
export function checkSameOrigin(req: IncomingMessage): Refusal {
  const site = req.headers["sec-fetch-site"];
  if (site !== undefined && site !== "same-origin" && site !== "none") {
    return {
      problem: Problem.crossSite,
      detail: `Sec-Fetch-Site is ${site}; actions come from the inspector's page only`,
    };
  }
  const origin = req.headers.origin;
  // Host and port, not the scheme, so that a TLS proxy in front (https:// origin, same Host) still passes.
  if (origin !== undefined && hostOf(origin) !== req.headers.host) {
    return {
      problem: Problem.crossSite,
      detail: `Origin ${origin} is not the inspector's; actions come from its page only`,
    };
  }
  const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json") {
    return {
      problem: Problem.unsupportedMediaType,
      detail: `Content-Type is ${JSON.stringify(type || "missing")}; send the action as application/json`,
    };
  }
  return undefined;
}

function hostOf(origin: string): string | undefined {
  try {
    return new URL(origin).host;
  } catch {
    return undefined; // "null" (a sandboxed frame, a file:// page) is no origin at all
  }
}
