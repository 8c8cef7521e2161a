import type { Env as WorkerEnv } from "./worker.js";

declare global {
  namespace Cloudflare {
    interface Env extends WorkerEnv {}
  }
}
