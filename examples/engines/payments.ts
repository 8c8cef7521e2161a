import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A payments API on loopback that dedupes on the Idempotency-Key header, as Stripe does: a repeated key gets the
 * first answer and no new charge. It loses the reply to the first charge (the charge is made, the socket is cut),
 * the failure a durable engine answers by running the step again.
 */
export async function paymentsApi() {
  const charges: { key: string; amount: number }[] = [];
  const answers = new Map<string, string>();
  let requests = 0;
  const server = http.createServer(async (req, res) => {
    requests += 1;
    let body = "";
    for await (const chunk of req) body += chunk;
    const key = String(req.headers["idempotency-key"] ?? "");
    const replay = answers.get(key);
    if (replay !== undefined)
      return void res.writeHead(200, { "content-type": "application/json" }).end(replay);
    const { amount } = JSON.parse(body) as { amount: number };
    charges.push({ key, amount });
    const answer = JSON.stringify({ id: `ch_${charges.length}`, amount });
    if (key) answers.set(key, answer);
    if (charges.length === 1) return void req.socket.destroy(); // the reply is lost; the charge is not
    res.writeHead(200, { "content-type": "application/json" }).end(answer);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    charges,
    /** Requests received, charges and replays. */
    requests: () => requests,
    /** What a step's tool does: POST the charge with the key idemkey hands it. */
    async charge(amount: number, idempotencyKey: string) {
      const res = await fetch(`${url}/charges`, {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": idempotencyKey },
        body: JSON.stringify({ amount }),
      });
      if (!res.ok) throw new Error(`the payments API answered ${res.status}`);
      return (await res.json()) as { id: string; amount: number };
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
