import { email } from "./email.js";
import { gitHost } from "./githost.js";
import { payments } from "./payments.js";
import type { Owner } from "./types.js";

export type { EffectRow, Owner } from "./types.js";

export interface Owners {
  readonly githost: Owner;
  readonly payments: Owner;
  readonly email: Owner;
  /** In the order the report lists them. */
  readonly all: readonly Owner[];
  close(): Promise<void>;
}

/** Starts the three owners on loopback, each on its own SQLite file in `dir`. */
export async function startOwners(dir: string): Promise<Owners> {
  const started: Owner[] = [];
  try {
    for (const start of [gitHost, payments, email]) started.push(await start(dir));
  } catch (error) {
    await Promise.allSettled(started.map((o) => o.close()));
    throw error;
  }
  const [g, p, e] = started as [Owner, Owner, Owner];
  return {
    githost: g,
    payments: p,
    email: e,
    all: started,
    async close() {
      await Promise.allSettled(started.map((o) => o.close()));
    },
  };
}
