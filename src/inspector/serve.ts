import { createServer, type Server } from "node:http";
import { checkNumber } from "../options/number-option.js";
import { createInspector, type Inspector } from "./inspector.js";
import { isLoopback } from "./loopback.js";
import type { InspectorOptions } from "./options.js";

export interface ServeOptions extends Omit<InspectorOptions, "remote"> {
  /**
   * The address to listen on. Anything but a loopback address (`127.0.0.1`, `::1`, `localhost`) needs
   * `allowRemote`, since the page shows every call's arguments and results.
   * @default "127.0.0.1"
   */
  host?: string;
  /** The port; 0 picks a free one (the URL says which). @default 0 */
  port?: number;
  /**
   * Allows a non-loopback `host`. Every API request then needs the token, reads included. The token travels in
   * clear over plain HTTP: use it on a trusted network only, or behind a TLS proxy.
   * @default false
   */
  allowRemote?: boolean;
}

export interface ServedInspector {
  /** The page's address, such as `http://127.0.0.1:41823/`. */
  url: string;
  token: string;
  server: Server;
  inspector: Inspector;
  /** Stops listening and ends open connections; the store stays open. */
  close(): Promise<void>;
}

/** Serves `createInspector(options)` with `node:http` on loopback (or, with `allowRemote`, on `host`). */
export async function serveInspector(options: ServeOptions): Promise<ServedInspector> {
  const host = options.host ?? "127.0.0.1";
  const port = options.port ?? 0;
  if (typeof host !== "string" || host === "") throw new TypeError("options.host must be a non-empty string");
  checkNumber("options.port", port, { integer: true, max: 65_535 });
  const remote = !isLoopback(host);
  if (remote && options.allowRemote !== true) {
    throw new TypeError(
      `options.host ${host} is not a loopback address; binding it needs options.allowRemote`,
    );
  }
  const { host: _, port: __, allowRemote: ___, ...rest } = options;
  const inspector = createInspector({ ...rest, remote });
  const server = createServer(inspector.handle);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  const actual = typeof address === "object" && address !== null ? address.port : port;
  const shown = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shown}:${actual}/`,
    token: inspector.token,
    server,
    inspector,
    close: () =>
      new Promise<void>((resolve) => {
        inspector.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
