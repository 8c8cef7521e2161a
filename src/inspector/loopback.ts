import { isIP } from "node:net";

/** Whether listening on `host` serves this machine only. */
export function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || (isIP(host) === 4 && host.startsWith("127."));
}
