import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import {
  type CallDetail,
  type CallSummary,
  createInspector,
  type InspectorOptions,
} from "../../src/inspector/index.js";

/** The shapes the data endpoints answer with, as the tests read them. */
export interface Answers {
  "/api/config": { label: string; readOnly: boolean; user: string; redact: string[]; tokenHeader: string };
  "/api/counts": {
    counts: Record<string, number>;
    total: number;
    unreadable: number;
    truncated: boolean;
    tools: string[];
  };
  "/api/calls": { total: number; offset: number; limit: number; calls: CallSummary[] };
  "/api/calls/:key": CallDetail & { result?: { login: { password: string } } };
  "/api/tasks": { tasks: { taskId: string; calls: number; counts: Record<string, number> }[] };
  "/api/tasks/:id/timeline": {
    taskId: string;
    from: number;
    to: number;
    calls: (CallSummary & { events: CallDetail["events"] })[];
  };
  action: { ok: boolean; action: string; by: string; state: string };
}

export interface Client {
  base: string;
  token: string;
  get(path: string, headers?: Record<string, string>): Promise<Response>;
  /** GETs `path` and parses the JSON answer as the endpoint `A` answers. */
  json<A extends keyof Answers>(endpoint: A, path: string): Promise<Answers[A]>;
  /** A JSON POST as the page sends it: same origin, the token header, application/json. */
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<Response>;
  close(): Promise<void>;
}

/** The inspector on a real `node:http` listener on an ephemeral loopback port, reached with fetch. */
export async function serve(options: InspectorOptions): Promise<Client> {
  const inspector = createInspector(options);
  const server = createServer(inspector.handle);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    token: inspector.token,
    get: (path, headers = {}) => fetch(base + path, { headers }),
    async json(_endpoint, path) {
      const res = await fetch(base + path);
      if (!res.ok) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
      return (await res.json()) as never;
    },
    post: (path, body, headers = {}) =>
      fetch(base + path, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          origin: base,
          "sec-fetch-site": "same-origin",
          "x-idemkey-token": inspector.token,
          ...headers,
        },
        body: typeof body === "string" ? body : JSON.stringify(body),
      }),
    close: () =>
      new Promise<void>((resolve) => {
        inspector.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Reads an RFC 9457 problem and checks its media type and shape. */
export async function problem(
  res: Response,
): Promise<{ type: string; title: string; status: number; detail: string } & Record<string, unknown>> {
  if (!res.headers.get("content-type")?.startsWith("application/problem+json")) {
    throw new Error(
      `expected application/problem+json, got ${res.headers.get("content-type")} (${res.status})`,
    );
  }
  const body = (await res.json()) as { type: string; title: string; status: number; detail: string };
  if (body.status !== res.status)
    throw new Error(`problem status ${body.status} differs from HTTP ${res.status}`);
  return body;
}

/** The slug at the end of a problem's type URI. */
export const slug = (p: { type: string }) => p.type.split("/").pop();

/** Server-sent events from a fetch body, one parsed `{ event, data }` at a time. */
export function events(res: Response) {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  return {
    async next(): Promise<{ event: string; data: unknown }> {
      for (;;) {
        const at = buffer.indexOf("\n\n");
        if (at >= 0) {
          const block = buffer.slice(0, at);
          buffer = buffer.slice(at + 2);
          let event = "message";
          let data = "";
          for (const line of block.split("\n")) {
            if (line.startsWith("event: ")) event = line.slice(7);
            else if (line.startsWith("data: ")) data += line.slice(6);
          }
          if (data === "") continue; // retry: and comments
          return { event, data: JSON.parse(data) };
        }
        const chunk = await reader.read();
        if (chunk.done) throw new Error("the stream ended");
        buffer += decoder.decode(chunk.value, { stream: true });
      }
    },
    cancel: () => reader.cancel(),
  };
}
