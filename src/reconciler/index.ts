// `idemkey/reconciler`: the background completer that decides unknown outcomes by asking each tool's reconcile.
export { createReconciler, type Reconciler } from "./create-reconciler.js";
export type { ReconcilerEvent } from "./events.js";
export type { ReconcilerOptions } from "./options.js";
export type { SweepReport } from "./sweep.js";
