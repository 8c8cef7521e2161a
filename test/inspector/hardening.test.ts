import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createHarness, defineTool, memoryStore } from "../../src/index.js";
import { createInspector, type InspectorOptions } from "../../src/inspector/index.js";
import { events, problem, slug } from "./support.js";

// Issue 12, cases 7 and 8: the live stream cannot be flooded, and redaction cannot be read around.

let server: Server | undefined;
let inspector: ReturnType<typeof createInspector> | undefined;
afterEach(async () => {
  inspector?.close();
  if (server) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server!.close(() => resolve()));
  }
  server = inspector = undefined;
});

async function start(options: Partial<InspectorOptions> = {}) {
  const store = memoryStore();
  const harness = createHarness({ store });
  const ran: string[] = [];
  const tool = defineTool({
    name: "note",
    effect: "keyed",
    run: (args: { n: number }) => {
      ran.push(String(args.n));
      return { n: args.n };
    },
  });
  inspector = createInspector({ store, pollMs: 50, ...options });
  server = createServer(inspector.handle);
  // A backlog that holds the whole burst, so the kernel queues it rather than dropping SYNs.
  await new Promise<void>((resolve) =>
    server!.listen({ port: 0, host: "127.0.0.1", backlog: 4096 }, resolve),
  );
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const token = inspector.token;
  const openStream = () =>
    fetch(`${base}/api/stream`, { headers: { accept: "text/event-stream", "x-idemkey-token": token } });
  return { store, harness, tool, ran, base, token, openStream };
}

describe("the live stream", () => {
  it("needs the token even on loopback, which a cross-site page cannot send", async () => {
    const { base, openStream } = await start();
    const bare = await fetch(`${base}/api/stream`);
    expect(bare.status).toBe(403);
    expect(slug(await problem(bare))).toBe("token-required");
    const res = await openStream();
    expect(res.status).toBe(200);
    await res.body!.cancel();
  });

  it("serves at most maxStreams at once, answers the next 503 with Retry-After, and frees a slot on close", async () => {
    const { openStream } = await start({ maxStreams: 3 });
    const open = await Promise.all([openStream(), openStream(), openStream()]);
    const readers = open.map((res) => events(res));
    for (const reader of readers) expect((await reader.next()).event).toBe("change");
    const refused = await openStream();
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("5");
    expect(slug(await problem(refused))).toBe("too-many-streams");

    await readers[0]!.cancel();
    // The server sees the close a little later; ask until it has.
    let again = await openStream();
    for (let i = 0; again.status === 503 && i < 500; i++) {
      await again.body?.cancel();
      await new Promise((resolve) => setTimeout(resolve, 10));
      again = await openStream();
    }
    expect(again.status).toBe(200);
    await again.body!.cancel();
    for (const reader of readers.slice(1)) await reader.cancel();
  });

  it("sends a new stream the current state alone: the others get nothing until the ledger changes", async () => {
    const { harness, tool, openStream } = await start();
    const first = events(await openStream());
    expect((await first.next()).event).toBe("change");
    const others = [];
    for (let i = 0; i < 20; i++) {
      const reader = events(await openStream());
      expect((await reader.next()).event).toBe("change");
      others.push(reader);
    }
    await harness.call("task", tool, { n: 1 });
    const key = harness.key("task", tool, { n: 1 });
    // Before the fix each of the 20 opened streams re-broadcast the counts to every stream first.
    const next = await first.next();
    expect(next.event).toBe("change");
    expect((next.data as { changed: string[] }).changed).toContain(key);
    await first.cancel();
    for (const reader of others) await reader.cancel();
  });

  it("keeps the page answering under a burst of 3,000 stream requests, of which only maxStreams are served", async () => {
    const { base, token } = await start();
    const { port } = new URL(base);
    const statuses: Promise<string>[] = [];
    const sockets: ReturnType<typeof connect>[] = [];
    for (let i = 0; i < 3000; i++) {
      const socket = connect(Number(port), "127.0.0.1");
      sockets.push(socket);
      socket.on("error", () => {});
      socket.write(
        `GET /api/stream HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nx-idemkey-token: ${token}\r\naccept: text/event-stream\r\n\r\n`,
      );
      statuses.push(
        new Promise((resolve) => {
          socket.once("data", (chunk: Buffer) => resolve(chunk.toString("latin1").slice(9, 12)));
          socket.once("close", () => resolve("closed"));
        }),
      );
    }
    // While the burst is being answered, the page's own requests still are.
    const counts = await fetch(`${base}/api/counts`);
    expect(counts.status).toBe(200);
    const all = await Promise.all(statuses);
    expect(all.filter((s) => s === "200")).toHaveLength(32);
    expect(all.filter((s) => s === "503")).toHaveLength(3000 - 32);
    expect((await fetch(`${base}/api/counts`)).status).toBe(200);
    for (const socket of sockets) socket.destroy();
  }, 120_000);
});

describe("redaction that cannot be read around", () => {
  it("masks [name, value] pairs, { name, value } headers and secrets in strings and in the audit trail", async () => {
    const { store, base } = await start();
    const harness = createHarness({ store });
    const call = defineTool({
      name: "callApi",
      effect: "keyed",
      run: () => ({ ok: true }),
    });
    await harness.call("task", call, {
      url: "https://api.example.test/x?api_key=sk_live_query1",
      headers: [["Authorization", "Bearer sk_live_pair1"]],
      list: [{ name: "Cookie", value: "sid=cookie1" }],
    });
    const flaky = defineTool({
      name: "login",
      effect: "unguarded",
      run: () => {
        throw new Error("SMTP said: auth failed for password=hunter2, token: tok_err1");
      },
    });
    await harness.call("task", flaky, { user: "ops" }).catch(() => {});
    const key = harness.key("task", call, {
      url: "https://api.example.test/x?api_key=sk_live_query1",
      headers: [["Authorization", "Bearer sk_live_pair1"]],
      list: [{ name: "Cookie", value: "sid=cookie1" }],
    });
    const flakyKey = harness.key("task", flaky, { user: "ops" });

    const texts = await Promise.all(
      [`/api/calls/${key}`, `/api/calls/${flakyKey}`, "/api/calls", "/api/tasks/task/timeline"].map(
        async (path) => {
          const res = await fetch(base + path);
          expect(res.status).toBe(200);
          return res.text();
        },
      ),
    );
    for (const text of texts) {
      for (const secret of ["sk_live_query1", "sk_live_pair1", "cookie1", "hunter2", "tok_err1"]) {
        expect(text).not.toContain(secret);
      }
    }
    const detail = JSON.parse(texts[0]!) as { args: unknown };
    expect(detail.args).toEqual({
      url: "https://api.example.test/x?api_key=[redacted]",
      headers: [["Authorization", "[redacted]"]],
      list: [{ name: "Cookie", value: "[redacted]" }],
    });
    expect(texts[1]).toContain("password=[redacted]");
  });

  it("withholds the args hash beside a masked field, which would give away a 3-digit cvc in 1,000 guesses", async () => {
    const { base, harness, store } = await start();
    const pay = defineTool({ name: "pay", effect: "keyed", run: () => ({ ok: true }) });
    await harness.call("task", pay, { customer: "cus_1", cvc: "123" });
    const open = defineTool({ name: "open", effect: "keyed", run: () => ({ ok: true }) });
    await harness.call("task", open, { customer: "cus_1" });

    const masked = (await (
      await fetch(`${base}/api/calls/${harness.key("task", pay, { customer: "cus_1", cvc: "123" })}`)
    ).json()) as { key: string };
    expect(masked).toMatchObject({
      args: { customer: "cus_1", cvc: "[redacted]" },
      argsHash: null,
      argsMasked: true,
    });
    const plain = (await (
      await fetch(`${base}/api/calls/${harness.key("task", open, { customer: "cus_1" })}`)
    ).json()) as { argsHash: unknown; argsMasked: unknown };
    expect(plain.argsHash).toMatch(/^[0-9a-f]{64}$/);
    expect(plain.argsMasked).toBe(false);
    // Nothing else in the answer is a hash of the arguments but the key, which names the call.
    const hashes = JSON.stringify(masked).match(/[0-9a-f]{64}/g) ?? [];
    expect(new Set(hashes)).toEqual(new Set([masked.key]));
    await store.close();
  });
});
