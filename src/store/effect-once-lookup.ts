/**
 * What an `effectOnceLookup` found, whichever store `effectOnce` kept its keys in: the effect committed with its key
 * (and `result`, the result it saved), or no trace of the key (`unknown`). What an owner answers a key lookup with
 * (docs/reconciler.md). Declared once here, below the stores and the owner, so that both meet on it.
 */
export type EffectOnceLookup<T> = { state: "completed"; result: T } | { state: "unknown" };
