/** What the reconciler tells `onEvent`: one event per record it decided, left undecided, or found taken. */
export type ReconcilerEvent =
  /** `reconcile` decided: `done` (the record is completed with its result) or `not_done` (approved to run again). */
  | {
      type: "reconciled";
      key: string;
      taskId: string;
      tool: string;
      by: string;
      outcome: "done" | "not_done";
      evidence?: unknown;
    }
  /** Nobody could tell: the record stays `outcome_unknown` for a person, or for the next try at `nextAt`. */
  | {
      type: "undecided";
      key: string;
      taskId: string;
      tool: string;
      by: string;
      reason: string;
      tries: number;
      nextAt: number;
    }
  /** Another reconciler (or a call) took the record first, or moved it between the read and the take. */
  | { type: "conflict"; key: string }
  /** A store error while taking or writing the record: it stays as it was (or pending, lapsing to unknown). */
  | { type: "failed"; key: string; error: unknown };
