import { cpuUsage } from "node:process";
import express from "express";
import inject from "light-my-request";
import { idempotency, keepRawBody } from "../src/express/index.js";
import { memoryStore } from "../src/store/memory.js";
import { engineDriver } from "./engine-driver.js";
import { countAllocations, exposedGc } from "./heap-bytes.js";
import { oneKb } from "./payloads.js";
import { median } from "./rounds.js";
import { printTable } from "./table.js";

/**
 * What the owner's steps cost per request, in the two measures timing noise moves least: bytes allocated on the V8
 * heap and CPU time (`process.cpuUsage`, user + system). Through the Express adapter (driven by light-my-request,
 * so no sockets, with the same app without idempotency as the floor) and through the engine alone, both on the
 * memory store, for a fresh key and a replay, with a ~1 KB JSON request body.
 *
 * Run compiled under plain node with `--expose-gc` (bench/index.ts does): tsx would give every closure an esbuild
 * `__name` call, which allocates, and closures are what this section counts.
 */
const BODY = JSON.stringify(oneKb);
const REQUEST_BYTES = new TextEncoder().encode(BODY);
const RESPONSE = { id: "ch_1", amount: 1999, currency: "eur", status: "succeeded" };
const RESPONSE_BYTES = new TextEncoder().encode(JSON.stringify(RESPONSE));
const RESPONSE_HEADERS: [string, string][] = [
  ["content-type", "application/json; charset=utf-8"],
  ["content-length", String(RESPONSE_BYTES.byteLength)],
  ["x-request-id", "req_1"],
  ["etag", 'W/"4a-1"'],
];
const REPLAY_KEYS = 200;
/** Requests per allocation count, and per CPU round. */
const ALLOC_REQUESTS = 200;
const CPU_REQUESTS = 400;
const ROUNDS = 5;

type Contender = (i: number) => Promise<void>;

export async function benchOwnerSteps(): Promise<void> {
  const gc = exposedGc("owner-steps");
  const contenders = { ...(await engineContenders()), ...(await expressContenders()) };

  for (const run of Object.values(contenders)) for (let i = 0; i < CPU_REQUESTS; i++) await run(i);

  const bytes = new Map<string, number[]>();
  const micros = new Map<string, number[]>();
  let offset = CPU_REQUESTS;
  // Rounds in turn, so that a drift in the machine's load falls on every contender alike.
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, run] of Object.entries(contenders)) {
      const allocated = countAllocations(gc);
      for (let i = 0; i < ALLOC_REQUESTS; i++) await run(offset + i);
      push(bytes, name, allocated() / ALLOC_REQUESTS);
      offset += ALLOC_REQUESTS;

      const cpu = cpuUsage();
      for (let i = 0; i < CPU_REQUESTS; i++) await run(offset + i);
      const used = cpuUsage(cpu);
      push(micros, name, (used.user + used.system) / CPU_REQUESTS);
      offset += CPU_REQUESTS;
    }
  }

  const bare = (kind: string) => median(micros.get(`Express without idempotency, ${kind}`)!);
  const bareBytes = (kind: string) => median(bytes.get(`Express without idempotency, ${kind}`)!);
  printTable(
    `owner steps per request, memory store, ~1 KB JSON body (${REQUEST_BYTES.byteLength} bytes): median of ${ROUNDS} rounds`,
    ["request", "KB allocated", "CPU µs", "KB over bare Express", "µs over bare Express"],
    Object.keys(contenders).map((name) => {
      const kb = median(bytes.get(name)!) / 1024;
      const us = median(micros.get(name)!);
      const through = /^Express, (.*)$/.exec(name)?.[1];
      const kind = through?.includes("parsed") ? "parsed body" : "raw body";
      return [
        name,
        kb.toFixed(1),
        us.toFixed(1),
        through === undefined ? "" : (kb - bareBytes(kind) / 1024).toFixed(1),
        through === undefined ? "" : (us - bare(kind)).toFixed(1),
      ];
    }),
  );
}

function push(into: Map<string, number[]>, name: string, value: number): void {
  const values = into.get(name) ?? [];
  values.push(value);
  into.set(name, values);
}

async function engineContenders(): Promise<Record<string, Contender>> {
  const engine = engineDriver("owner-steps", memoryStore(), REQUEST_BYTES, {
    headers: RESPONSE_HEADERS,
    body: RESPONSE_BYTES,
  });
  for (let i = 0; i < REPLAY_KEYS; i++) await engine.fresh(`replay-${i}`);
  let next = 0;
  return {
    "engine alone, fresh key": () => engine.fresh(`fresh-${next++}`),
    "engine alone, replay": (i) => engine.replay(`replay-${i % REPLAY_KEYS}`),
  };
}

/** `express.json()` with `keepRawBody` (the exact form from the bytes) and without it (the parsed value's). */
async function expressContenders(): Promise<Record<string, Contender>> {
  const out: Record<string, Contender> = {};
  for (const kind of ["raw body", "parsed body"] as const) {
    const json = kind === "raw body" ? express.json({ verify: keepRawBody }) : express.json();
    const handler = (_req: express.Request, res: express.Response) => {
      res.setHeader("x-request-id", "req_1");
      res.status(201).json(RESPONSE);
    };
    const bare = express();
    bare.post("/charges", json, handler);
    const app = express();
    app.post("/charges", json, idempotency({ store: memoryStore(), scope: () => "single-tenant" }), handler);
    const send = async (to: express.Express, key: string, replayed: boolean) => {
      const response = await inject(to, {
        method: "POST",
        url: "/charges",
        headers: { "content-type": "application/json", "idempotency-key": key },
        payload: BODY,
      });
      if (response.statusCode !== 201 || (response.headers["idempotent-replayed"] === "true") !== replayed) {
        throw new Error(`owner-steps: ${key} answered ${response.statusCode} ${response.body}`);
      }
    };
    for (let i = 0; i < REPLAY_KEYS; i++) await send(app, `replay-${i}`, false);
    let next = 0;
    out[`Express without idempotency, ${kind}`] = (i) => send(bare, `bare-${i}`, false);
    out[`Express, ${kind}, fresh key`] = () => send(app, `fresh-${next++}`, false);
    out[`Express, ${kind}, replay`] = (i) => send(app, `replay-${i % REPLAY_KEYS}`, true);
  }
  return out;
}
