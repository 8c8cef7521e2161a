import autocannon from "autocannon";

/** The charge the owner benches post: one body for every request, so that rows differ only by key and route. */
export const CHARGE_BODY = JSON.stringify({
  amount: 1999,
  currency: "eur",
  customer: "cus_91xk2",
  description: "Order 8812",
});

/** How long a load runs: for `seconds` (autocannon counts whole seconds), or for `amount` requests. */
export type LoadLength = { seconds: number } | { amount: number };

export interface KeyedLoad {
  connections: number;
  /** The Idempotency-Key of each request, asked once per request. */
  key: () => string;
  length: LoadLength;
  /** The JSON body every request posts. */
  body: string;
  /** Hears each answer's status and latency in ms (autocannon's own histogram keeps whole ms only). */
  onResponse?: (status: number, ms: number) => void;
}

/** One autocannon run of keyed JSON POSTs to `url`; what to make of its errors and non-2xx answers is the caller's. */
export async function loadKeyed(url: string, load: KeyedLoad): Promise<autocannon.Result> {
  const instance = autocannon({
    url,
    method: "POST",
    connections: load.connections,
    ...("seconds" in load.length ? { duration: load.length.seconds } : { amount: load.length.amount }),
    headers: { "content-type": "application/json" },
    body: load.body,
    requests: [
      {
        setupRequest: (request) => {
          request.headers = { ...request.headers, "idempotency-key": load.key() };
          return request;
        },
      },
    ],
  });
  const { onResponse } = load;
  if (onResponse) {
    (instance as unknown as NodeJS.EventEmitter).on(
      "response",
      (_client: unknown, status: number, _bytes: number, ms: number) => onResponse(status, ms),
    );
  }
  return await instance;
}
