import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  type JSONRPCMessage,
  type JSONRPCRequest,
  LATEST_PROTOCOL_VERSION,
} from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { mcpGateway } from "../../src/gateway/index.js";
import { memoryStore } from "../../src/index.js";
import { IDEMPOTENCY_KEY_META, REPLAYED_META } from "../../src/mcp/meta.js";
import { startGateway, tempRuns, mcpUpstream as upstream } from "./support.js";

// The gateway's request ids, driven by a raw JSON-RPC client that picks its own ids (any string or integer MCP
// allows), so that it can use the very ids the gateway uses upstream. As a library over the SDK's in-memory
// transports, in front of an SDK server whose tools count their runs in the test's own variables (and every message
// the gateway sends upstream recorded on its transport); and from the CLI over stdio and Streamable HTTP, in front
// of test/gateway/fixtures/http-upstream.mjs, which counts its effects in its own file.
type Id = string | number;
type Answer = { jsonrpc: "2.0"; id: Id; result?: { [name: string]: unknown }; error?: unknown };

/** A client that sends what it is given and keeps what it receives: answers, notifications, the server's requests. */
async function rawClient(transport: Transport) {
  const answers: Answer[] = [];
  const notifications: JSONRPCMessage[] = [];
  let answerRequest: ((request: JSONRPCRequest) => { [name: string]: unknown }) | undefined;
  let read = 0;
  transport.onmessage = (message) => {
    if ("method" in message && "id" in message) {
      const result = answerRequest?.(message as JSONRPCRequest) ?? {};
      void transport.send({ jsonrpc: "2.0", id: message.id, result });
    } else if ("method" in message) notifications.push(message);
    else answers.push(message as Answer);
  };
  await transport.start();
  const poll = async <T>(pick: () => T | undefined): Promise<T> => {
    for (;;) {
      const found = pick();
      if (found !== undefined) return found;
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  const client = {
    // A send that fails shows as an answer that never comes; closing the client aborts the sends in flight.
    send: (message: JSONRPCMessage) => void transport.send(message).catch(() => {}),
    /** The answer to the request sent under exactly `id` (2 and "2" are two ids). */
    response: (id: Id) => poll(() => answers.find((a) => a.id === id)),
    /** The next answer received, in order. */
    async next() {
      const answer = await poll(() => answers[read]);
      read++;
      return answer;
    },
    answers: () => answers,
    notifications: () => notifications,
    onRequest(answer: (request: JSONRPCRequest) => { [name: string]: unknown }) {
      answerRequest = answer;
    },
    async initialize(id: Id, capabilities: { [name: string]: unknown } = {}) {
      client.send({
        jsonrpc: "2.0",
        id,
        method: "initialize",
        params: {
          protocolVersion: LATEST_PROTOCOL_VERSION,
          capabilities,
          clientInfo: { name: "raw", version: "1" },
        },
      });
      await client.next();
      client.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    },
    close: () => transport.close(),
  };
  return client;
}

async function start() {
  const runs = { charge: 0, echo: 0, aborted: [] as string[] };
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => (release = resolve));
  const server = new McpServer({ name: "owner", version: "1.0.0" });
  const onAbort = (signal: AbortSignal, what: string, then = () => {}) => {
    const record = () => {
      runs.aborted.push(what);
      then();
    };
    if (signal.aborted) record();
    else signal.addEventListener("abort", record);
  };
  server.registerTool(
    "charge",
    { inputSchema: { amount: z.number(), hold: z.boolean().optional() } },
    async ({ amount, hold }, extra) => {
      runs.charge++;
      onAbort(extra.signal, `charge ${amount}`);
      if (hold) await gate;
      return { content: [{ type: "text", text: `charged ${amount}` }] };
    },
  );
  server.registerTool(
    "echo",
    { inputSchema: { text: z.string(), hold: z.boolean().optional() } },
    async ({ text, hold }, extra) => {
      runs.echo++;
      onAbort(extra.signal, `echo ${text}`);
      const progressToken = extra._meta?.progressToken;
      if (progressToken !== undefined) {
        await extra.sendNotification({
          method: "notifications/progress",
          params: { progressToken, progress: 1, total: 2 },
        });
      }
      if (hold) await gate;
      return { content: [{ type: "text", text: `echo ${text}` }] };
    },
  );
  server.registerTool("wait", { inputSchema: { name: z.string() } }, async ({ name }, extra) => {
    await new Promise<void>((resolve) => onAbort(extra.signal, `wait ${name}`, resolve));
    return { content: [] };
  });
  server.registerTool("roots", { inputSchema: {} }, async () => {
    const { roots } = await server.server.listRoots();
    return { content: [{ type: "text", text: roots.map((r) => r.name).join(",") }] };
  });
  const [serverSide, upstreamSide] = InMemoryTransport.createLinkedPair();
  const sentUpstream: JSONRPCMessage[] = [];
  const send = upstreamSide.send.bind(upstreamSide);
  upstreamSide.send = (message, options) => {
    sentUpstream.push(message);
    return send(message, options);
  };
  const [clientSide, gatewaySide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const gateway = mcpGateway({ upstream: upstreamSide, client: gatewaySide, store: memoryStore() });
  await gateway.start();
  const client = await rawClient(clientSide);
  await client.initialize("init", { roots: {} });
  /** The id the gateway sent the call of `tool` upstream under, once it did. */
  async function upstreamIdOf(tool: string): Promise<Id> {
    for (;;) {
      const found = sentUpstream.find(
        (m) => "method" in m && m.method === "tools/call" && (m.params as { name: string }).name === tool,
      );
      if (found !== undefined && "id" in found) return found.id as Id;
      await new Promise((r) => setTimeout(r, 5));
    }
  }
  return {
    client,
    runs,
    release,
    sentUpstream,
    upstreamIdOf,
    /** The upstream server goes away, as a process that exits. */
    stopUpstream: () => server.close(),
    close: () => gateway.close(),
  };
}

const call = (id: Id, name: string, args: { [name: string]: unknown }, key?: string): JSONRPCMessage => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name, arguments: args, ...(key === undefined ? {} : { _meta: { [IDEMPOTENCY_KEY_META]: key } }) },
});

const cancelled = (requestId: Id): JSONRPCMessage => ({
  jsonrpc: "2.0",
  method: "notifications/cancelled",
  params: { requestId, reason: "test" },
});

/** Whether an answer says it is a replay. */
const replayed = (answer: Answer) =>
  (answer.result?._meta as { [name: string]: unknown } | undefined)?.[REPLAYED_META];

const text = (t: string) => ({ content: [{ type: "text", text: t }] });

/** Waits until `check` holds, polling the test's own variables. */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 5));
}

describe("mcpGateway: no request id a client sends collides with the gateway's own", () => {
  const directions = [
    { keyed: "charge", args: { amount: 5, hold: true }, other: "echo", otherArgs: { text: "hi" } },
    { keyed: "echo", args: { text: "hi", hold: true }, other: "charge", otherArgs: { amount: 5 } },
  ] as const;
  const answers: { [tool: string]: string } = { charge: "charged 5", echo: "echo hi" };

  it.each(directions)(
    "a keyed $keyed and a $other sent under the id the keyed call went upstream with each get their own answer; the key records its own",
    async ({ keyed, args, other, otherArgs }) => {
      const { client, runs, release, upstreamIdOf, close } = await start();
      try {
        client.send(call(7, keyed, args, "k-1"));
        const taken = await upstreamIdOf(keyed);
        await until(() => runs[keyed] === 1);
        client.send(call(taken, other, otherArgs));
        // The keyed call is held upstream: the first answer the client gets is the other call's, under its id.
        expect(await client.next()).toEqual({ jsonrpc: "2.0", id: taken, result: text(answers[other]!) });
        release();
        expect((await client.response(7)).result).toEqual(text(answers[keyed]!));
        client.send(call("retry", keyed, args, "k-1"));
        const replay = await client.response("retry");
        expect(replay.result?.content).toEqual(text(answers[keyed]!).content);
        expect(replayed(replay)).toBe(true);
        expect([runs.charge, runs.echo, runs.aborted]).toEqual([1, 1, []]);
      } finally {
        await close();
      }
    },
  );

  it('concurrent calls under ids alike but for their type (2 and "2") each get their own answer under their own id', async () => {
    const { client, runs, release, sentUpstream, close } = await start();
    try {
      const ids: Id[] = [
        0,
        "0",
        1,
        "1",
        2,
        "2",
        -3,
        "",
        "idemkey-gateway:1",
        "idemkey-gateway:2",
        2 ** 53 - 1,
      ];
      const keyedIds = ids.map((id) => (typeof id === "number" ? id + 100 : `c${id}`));
      release();
      // An unkeyed echo under each id and a keyed charge under each of the others, all at once.
      ids.forEach((id, n) => {
        client.send(call(id, "echo", { text: `${typeof id} ${id}` }));
        client.send(call(keyedIds[n]!, "charge", { amount: n }, `k-${n}`));
      });
      for (const [n, id] of ids.entries()) {
        expect(await client.response(id)).toEqual({
          jsonrpc: "2.0",
          id,
          result: text(`echo ${typeof id} ${id}`),
        });
        expect((await client.response(keyedIds[n]!)).result).toEqual(text(`charged ${n}`));
      }
      expect(client.answers()).toHaveLength(1 + ids.length * 2);
      expect([runs.charge, runs.echo]).toEqual([ids.length, ids.length]);
      // Every request went upstream under an id of the gateway's, none twice.
      const upstreamIds = sentUpstream
        .filter((m) => "method" in m && "id" in m)
        .map((m) => (m as { id: Id }).id);
      expect(new Set(upstreamIds).size).toBe(upstreamIds.length);
    } finally {
      await close();
    }
  });

  it("a client's cancellation reaches the request it names, never a keyed call, whatever id it names", async () => {
    const { client, runs, release, upstreamIdOf, close } = await start();
    try {
      client.send(call("a", "charge", { amount: 1, hold: true }, "k-held"));
      const taken = await upstreamIdOf("charge");
      await until(() => runs.charge === 1);
      // The client has no request under the keyed call's upstream id: nothing upstream is cancelled.
      client.send(cancelled(taken));
      client.send({ jsonrpc: "2.0", id: "after", method: "ping" });
      await client.response("after");
      expect(runs.aborted).toEqual([]);
      // The client's own unkeyed request under that id is the one cancelled upstream.
      client.send(call(taken, "wait", { name: "mine" }));
      await upstreamIdOf("wait");
      client.send(cancelled(taken));
      await until(() => runs.aborted.length > 0);
      expect(runs.aborted).toEqual(["wait mine"]);
      // A cancellation of the keyed call itself is not passed on: it runs to its end and is recorded.
      client.send(cancelled("a"));
      release();
      expect((await client.response("a")).result).toEqual(text("charged 1"));
      expect(runs.aborted).toEqual(["wait mine"]);
      expect(client.answers().some((a) => a.id === taken)).toBe(false);
    } finally {
      await close();
    }
  });

  it("a request passed through when the upstream goes away is answered under the client's id", async () => {
    const { client, upstreamIdOf, stopUpstream, close } = await start();
    try {
      client.send(call("idemkey-gateway:1", "wait", { name: "left" }));
      await upstreamIdOf("wait");
      await stopUpstream();
      const answer = await client.response("idemkey-gateway:1");
      expect(answer.error).toMatchObject({ code: -32603, message: expect.stringMatching(/exited/) });
    } finally {
      await close();
    }
  });

  it("the server's requests and progress reach the client as sent, and its answers reach the server", async () => {
    const { client, runs, release, close } = await start();
    release();
    try {
      // The server asks the client for its roots during a keyed call, while the client has a request of its own in
      // flight under the id the server's request takes (its first, 0).
      const asked: Id[] = [];
      client.onRequest((request) => {
        asked.push(request.id);
        return { roots: [{ uri: "file:///work", name: "work" }] };
      });
      client.send(call("r", "roots", {}, "k-roots"));
      client.send({
        jsonrpc: "2.0",
        id: 0,
        method: "tools/call",
        params: { name: "echo", arguments: { text: "zero" }, _meta: { progressToken: "idemkey-gateway:1" } },
      });
      expect((await client.response("r")).result).toEqual(text("work"));
      expect((await client.response(0)).result).toEqual(text("echo zero"));
      expect(asked).toEqual([0]);
      expect(client.notifications()).toContainEqual({
        jsonrpc: "2.0",
        method: "notifications/progress",
        params: { progressToken: "idemkey-gateway:1", progress: 1, total: 2 },
      });
      expect(runs.echo).toBe(1);
    } finally {
      await close();
    }
  });
});

const root = fileURLToPath(new URL("../../", import.meta.url));
const CLI = join(root, "src/cli/index.ts");
const runs = tempRuns("idemkey-gateway-ids-");

describe("idemkey gateway mcp: client ids alike the gateway's, over stdio and Streamable HTTP", () => {
  it.each(["stdio", "http"] as const)(
    "over %s, a keyed append held upstream and tools/list calls under ids alike the gateway's each get their own answer",
    async (mode) => {
      const run = runs.next();
      const up = await upstream(run, "sse");
      const db = join(run, "gateway.db");
      const flags = ["--upstream-url", up.url];
      const transport =
        mode === "stdio"
          ? new StdioClientTransport({
              command: process.execPath,
              args: ["--import", "tsx", CLI, "gateway", "mcp", "--store", `sqlite:${db}`, ...flags],
              cwd: root,
              stderr: "ignore",
            })
          : new StreamableHTTPClientTransport(new URL((await startGateway("mcp", db, flags)).url));
      const client = await rawClient(transport);
      try {
        await client.initialize("init");
        const release = join(run, "release");
        const append = { text: "charge", release };
        client.send(call("charge", "append", append, "k-append"));
        while (up.effects().length === 0) await new Promise((r) => setTimeout(r, 20));
        // The ids the gateway gives its own requests upstream, old ("idemkey-gateway:<n>") and new, as the client's.
        const ids: Id[] = ["idemkey-gateway:1", "idemkey-gateway:2", 1, 2, 3, "1", "2", "3"];
        for (const id of ids) client.send({ jsonrpc: "2.0", id, method: "tools/list" });
        const listed = Promise.all(ids.map((id) => client.response(id)));
        // The keyed call waits for the release file: every tools/list is answered first.
        const first = await Promise.race([listed.then(() => "tools/list"), client.response("charge")]);
        expect(first).toBe("tools/list");
        for (const answer of await listed) expect(answer.result?.tools).toBeDefined();
        writeFileSync(release, "");
        expect((await client.response("charge")).result).toEqual(text("lines: 1"));
        client.send(call("idemkey-gateway:3", "append", append, "k-append"));
        const replay = await client.response("idemkey-gateway:3");
        expect(replay.result?.content).toEqual(text("lines: 1").content);
        expect(replayed(replay)).toBe(true);
        expect(up.effects()).toEqual(["charge"]);
      } finally {
        await client.close();
      }
    },
  );
});
