import { env } from "cloudflare:workers";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { d1Store } from "../../src/cloudflare/index.js";
import { idempotency } from "../../src/hono/index.js";

/**
 * The owner engine through Hono inside workerd (issue 29): the middleware on a D1 table, a handler whose effect is
 * written by the EFFECTS object (the independent record), requests through Hono's own request path.
 */
const table = `owner_${crypto.randomUUID().replaceAll("-", "")}`;
const effects = () => env.EFFECTS.get(env.EFFECTS.idFromName("hono-owner"));

function app() {
  const hono = new Hono();
  hono.use(
    "/charges",
    idempotency({
      store: d1Store(env.DB, { table }),
      scope: (c) => c.req.header("x-account") ?? "anonymous",
    }),
  );
  hono.post("/charges", async (c) => {
    const key = c.req.header("idempotency-key") ?? "none";
    const body = await c.req.json<{ cents: number }>();
    const n = await effects().effect(key);
    return c.json({ id: `ch_${key.slice(0, 6)}_${n}`, cents: body.cents }, 201);
  });
  return hono;
}

const charge = (hono: Hono, key: string, cents: number) =>
  hono.request("/charges", {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": key, "x-account": "acme" },
    body: JSON.stringify({ cents }),
  });

describe("the owner engine through Hono, in workerd, on d1Store", () => {
  it("runs the handler once for a key and replays its answer to a retry, from another app on the same table", async () => {
    const key = `k-${crypto.randomUUID()}`;
    const first = await charge(app(), key, 500);
    expect(first.status).toBe(201);
    const firstBody = await first.json();
    // Another app, as another invocation or isolate would build it, on the same D1 table.
    const retry = await charge(app(), key, 500);
    expect(retry.status).toBe(201);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(await retry.json()).toEqual(firstBody);
    expect(await effects().count(key)).toBe(1);
  });

  it("refuses the same key with another body, and runs nothing for it", async () => {
    const key = `k-${crypto.randomUUID()}`;
    const hono = app();
    expect((await charge(hono, key, 500)).status).toBe(201);
    const reused = await charge(hono, key, 900);
    expect(reused.status).toBe(422);
    expect(reused.headers.get("content-type")).toMatch(/application\/problem\+json/);
    expect(await effects().count(key)).toBe(1);
  });

  it("gives one effect to concurrent requests with one key: the others replay it or are told it is in flight", async () => {
    const key = `k-${crypto.randomUUID()}`;
    const answers = await Promise.all([app(), app(), app()].map((hono) => charge(hono, key, 500)));
    expect(await effects().count(key)).toBe(1);
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses.filter((s) => s === 201).length).toBeGreaterThanOrEqual(1);
    for (const status of statuses) expect([201, 409]).toContain(status);
    const replayed = answers.filter((a) => a.headers.get("idempotent-replayed") === "true").length;
    expect(replayed).toBe(statuses.filter((s) => s === 201).length - 1);
  });
});
