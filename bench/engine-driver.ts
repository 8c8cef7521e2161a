import { idempotencyEngine } from "../src/owner/engine.js";
import type { Store } from "../src/store/types.js";

/** What the engine answers with for a new key, saved and then replayed. */
export interface EngineResponse {
  headers: [string, string][];
  body: Uint8Array;
}

export interface EngineDriver {
  /** A new key: `begin`, which must say run, then `lock.finish` with the response (201). */
  fresh(key: string): Promise<void>;
  /** A completed key: `begin`, which must replay. */
  replay(key: string): Promise<void>;
}

/**
 * The owner engine driven without HTTP, as every adapter drives it: a POST /charges with `requestBody` as JSON,
 * single-tenant. A step that answers otherwise throws, naming `section`, so a bench never times a wrong path.
 */
export function engineDriver(
  section: string,
  store: Store,
  requestBody: Uint8Array,
  response: EngineResponse,
): EngineDriver {
  const engine = idempotencyEngine({ store, scope: "single-tenant" });
  const begin = (key: string) =>
    engine.begin({
      method: "POST",
      target: "/charges",
      keyFields: [key],
      contentType: "application/json",
      body: () => ({ bytes: requestBody }),
      request: undefined,
    });
  return {
    async fresh(key) {
      const decision = await begin(key);
      if (decision.action !== "run") throw new Error(`${section}: a new key got "${decision.action}"`);
      await decision.lock.finish({
        status: 201,
        headers: response.headers,
        body: response.body,
        threw: false,
      });
    },
    async replay(key) {
      const decision = await begin(key);
      if (decision.action !== "respond" || !decision.replayed) {
        throw new Error(`${section}: a completed key was not replayed`);
      }
    },
  };
}
