import {
  createServer,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerResponse,
} from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";
import { subjectName } from "./subject-name.js";

// What the HTTP gateway and the MCP gateway's Streamable HTTP listener share about listening: HTTPS, a client
// certificate a CA signed, and the caller that certificate names.

/** The gateway's certificate and private key (PEM), and the CA that signs its clients' certificates. */
export interface GatewayTls {
  cert: string | Buffer;
  key: string | Buffer;
  ca?: string | Buffer;
}

/** What of a client certificate names the caller. */
export type ScopeMtls = "subject" | "fingerprint";

/** How a gateway listens with TLS and who its clients' certificates say they are: the same for both gateways. */
export interface TlsOptions {
  /**
   * Listens with TLS (HTTPS) with this certificate and private key (PEM). With `ca`, every client must present a
   * certificate that `ca` signed: a request without one is answered `401` (problem+json) and goes no further, and
   * with `scopeMtls` the certificate names the caller.
   * @example tls: { cert: readFileSync("gateway.crt"), key: readFileSync("gateway.key"), ca: readFileSync("clients-ca.crt") }
   */
  tls?: GatewayTls;
  /**
   * Takes the scope from the client certificate: its `subject` (the distinguished name read from the certificate's
   * DER, such as `O=acme,CN=billing`: a renewed certificate with the same subject keeps its keys) or its
   * `fingerprint` (SHA-256, a new one per certificate, renewals included). The MCP gateway reads it when a session
   * starts, and refuses the session's later requests that come with a certificate naming another caller. Needs
   * `tls.ca`; not with `scopeHeader`.
   */
  scopeMtls?: ScopeMtls;
}

/** Throws a `TypeError` naming the option when `tls` or `scopeMtls` cannot be used (with `scopeHeader`). */
export function checkTls(tls: unknown, scopeMtls: unknown, scopeHeader: unknown): void {
  const given = tls as GatewayTls | undefined;
  if (given !== undefined && (typeof given !== "object" || given === null || !given.cert || !given.key)) {
    throw new TypeError("options.tls must have a cert and a key (PEM)");
  }
  if (scopeMtls === undefined) return;
  if (scopeMtls !== "subject" && scopeMtls !== "fingerprint") {
    throw new TypeError(`options.scopeMtls must be "subject" or "fingerprint", got ${String(scopeMtls)}`);
  }
  if (!given?.ca)
    throw new TypeError("options.scopeMtls needs options.tls.ca, the CA that signs client certificates");
  if (scopeHeader !== undefined)
    throw new TypeError("options.scopeMtls and options.scopeHeader are two scopes; give one");
}

/** The caller a verified client certificate names. */
export function certificateScope(req: IncomingMessage, by: ScopeMtls): string {
  const certificate = (req.socket as TLSSocket).getPeerCertificate();
  if (by === "fingerprint") return `sha256:${certificate.fingerprint256}`;
  // From the certificate's own bytes: Node's parsed `subject` merges a repeated attribute type and flattens an RDN
  // of several attributes, so that two subjects would read alike (see subject-name.ts).
  return subjectName(certificate.raw);
}

/**
 * Answers `401` (problem+json) to a request without a client certificate that `tls.ca` signed, and says whether it
 * did: such a request must reach nothing else.
 */
export function refusedUncertified(
  req: IncomingMessage,
  res: ServerResponse,
  tls: GatewayTls | undefined,
): boolean {
  if (!tls?.ca) return false;
  const socket = req.socket as TLSSocket;
  if (socket.authorized) return false;
  const reason = socket.authorizationError;
  const presented = Object.keys(socket.getPeerCertificate() ?? {}).length > 0;
  res.statusCode = 401;
  res.setHeader("content-type", "application/problem+json");
  res.end(
    JSON.stringify({
      type: "https://idemkey.dev/problems/client-certificate-required",
      title: "Client certificate required",
      status: 401,
      detail: presented
        ? `The client certificate was not accepted (${String(reason)}); the request was not processed.`
        : "This gateway needs a client certificate signed by its CA; the request was not processed.",
    }),
  );
  return true;
}

/** A server listening on `host:port` (with HTTPS when `tls` is given): its origin, and how to close it. */
export async function listen(
  listener: RequestListener,
  options: { tls: GatewayTls | undefined; host: string; port: number },
): Promise<{ origin: string; close(): Promise<void> }> {
  const { tls, host, port } = options;
  // With a CA, the handshake asks for a client certificate but lets a connection without one through, so that it
  // gets a problem+json answer rather than a failed handshake it cannot read.
  const server: Server =
    tls === undefined
      ? createServer(listener)
      : createTlsServer({ ...tls, requestCert: tls.ca !== undefined, rejectUnauthorized: false }, listener);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const at = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    origin: `${tls === undefined ? "http" : "https"}://${at}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
