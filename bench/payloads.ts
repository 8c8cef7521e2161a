/** Tool-call arguments of the sizes the benchmarks compare; deterministic so runs are comparable. */

function order(i: number) {
  return {
    sku: `SKU-${(i * 7919) % 100000}`,
    quantity: (i % 5) + 1,
    unitPrice: Math.round(((i * 37) % 10000) * 1.07) / 100,
    tags: ["gift", i % 2 ? "express" : "standard"],
  };
}

export const small = { to: "ana@example.com", subject: "Weekly report", draft: false, retries: 3 };

export const oneKb = {
  customer: { id: "cus_91xk2", email: "ana@example.com", name: "Ana Müller", vip: true },
  currency: "eur",
  items: Array.from({ length: 6 }, (_, i) => order(i)),
  shipping: { street: "Rua das Flores 12", city: "Lisboa", zip: "1200-195", country: "PT" },
  metadata: { source: "agent", task: "task-8812", attempt: 1, note: "Leave at the door, ring twice. ☎" },
};

export const sixtyFourKb = {
  batch: "2026-11-30",
  orders: Array.from({ length: 420 }, (_, i) => ({ id: `ord_${i}`, ...order(i), note: `n${i}`.repeat(8) })),
};

function nest(depth: number): unknown {
  let value: unknown = { leaf: true, n: 1.5 };
  for (let i = 0; i < depth; i++) value = { level: i, child: value, list: [i] };
  return value;
}

export const deep = nest(200);

/** Arguments as they arrive from anything that itself sent canonical JSON: members already in order. */
function sortedCopy(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedCopy);
  if (value === null || typeof value !== "object") return value;
  const entries = Object.keys(value)
    .sort()
    .map((name) => [name, sortedCopy((value as Record<string, unknown>)[name])]);
  return Object.fromEntries(entries);
}

/**
 * Arguments whose member names are new on every call (a map keyed by ids): the worst case for a cache of shapes.
 * A pool larger than the cache, walked in turn, so that no name sequence is seen again while it could be cached.
 */
export const oneOffShapes = Array.from({ length: 8192 }, (_, call) =>
  Object.fromEntries(
    Array.from({ length: 8 }, (_, i) => [
      `cus_${call * 8 + i}`,
      { sku: `SKU-${i}`, quantity: i + 1, paid: true },
    ]),
  ),
);

export const payloads = [
  { name: "~100 B", value: small },
  { name: "~1 KB", value: oneKb },
  { name: "~1 KB, members already in order", value: sortedCopy(oneKb) },
  { name: "~64 KB", value: sixtyFourKb },
  { name: "nested 200", value: deep },
] as const;
