import { importPeer } from "../peer/import-peer.js";

/** `@opentelemetry/api`, loaded once for every file of `idemkey/otel`; see `importPeer`. */
export const {
  context,
  createContextKey,
  INVALID_SPAN_CONTEXT,
  metrics,
  propagation,
  SpanKind,
  SpanStatusCode,
  trace,
} = await importPeer("idemkey/otel", "@opentelemetry/api", () => import("@opentelemetry/api"));
