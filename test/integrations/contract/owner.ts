import { appendFileSync, readFileSync } from "node:fs";

/** What the fake owner does when a tool's body reaches it. */
export const Behaviour = {
  /** Does the effect and answers a receipt. */
  succeed: "succeed",
  /** Refuses with no effect ("insufficient funds") until `accept()`, then succeeds. */
  refuseFirst: "refuse-first",
  /** Does the effect, then fails (the connection dropped after the payment was sent). */
  failAfterEffect: "fail-after-effect",
  /** Does the effect and answers a value JSON cannot hold (a BigInt). */
  nonJson: "non-json",
  /** Does the effect, then holds the answer until the caller hangs up (its signal aborts). */
  holdUntilAbort: "hold-until-abort",
} as const;
export type Behaviour = (typeof Behaviour)[keyof typeof Behaviour];

/** The words of the owner's refusal: what a declared classifier recognises. */
export const REFUSAL = "insufficient funds";

/** One line of the owner's file: a run of the tool's body, or an effect that happened. */
interface Line {
  kind: "run" | "effect";
  key: string | null;
  receipt?: string;
}

/**
 * The owner of the side effect (a payments API): it writes every run and every effect to a file the code under test
 * never sees, and, when `dedupes` is set, answers a key it has seen with the first receipt instead of a new effect,
 * as an owner that honours Idempotency-Key does.
 */
export function fakeOwner(
  file: string,
  behaviour: Behaviour,
  options: { dedupes: boolean; hangUp: AbortSignal },
) {
  appendFileSync(file, "");
  const lines = (): Line[] =>
    readFileSync(file, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Line);
  const write = (line: Line) => appendFileSync(file, `${JSON.stringify(line)}\n`);
  let refusing = behaviour === "refuse-first";
  let effected: () => void = () => {};
  const firstEffect = new Promise<void>((resolve) => {
    effected = resolve;
  });

  const effect = (key: string | undefined): { receipt: string } => {
    const seen =
      options.dedupes && key !== undefined
        ? lines().find((l) => l.kind === "effect" && l.key === key)
        : undefined;
    if (seen?.receipt !== undefined) return { receipt: seen.receipt };
    const receipt = `r-${lines().filter((l) => l.kind === "effect").length + 1}`;
    write({ kind: "effect", key: key ?? null, receipt });
    effected();
    return { receipt };
  };

  return {
    file,
    /** What a tool's body calls, with the key idemkey handed it (if any). */
    async act(key: string | undefined): Promise<unknown> {
      write({ kind: "run", key: key ?? null });
      switch (behaviour) {
        case Behaviour.succeed:
          return effect(key);
        case Behaviour.refuseFirst:
          if (refusing) throw new Error(`declined: ${REFUSAL}`);
          return effect(key);
        case Behaviour.failAfterEffect:
          effect(key);
          throw new Error("connection reset after the payment was sent");
        case Behaviour.nonJson:
          effect(key);
          return { receipt: "r-1", cents: 4_999n };
        case Behaviour.holdUntilAbort: {
          const answer = effect(key);
          await new Promise<void>((resolve) => {
            if (options.hangUp.aborted) resolve();
            options.hangUp.addEventListener("abort", () => resolve(), { once: true });
          });
          return answer;
        }
      }
    },
    /** The funds arrived: the owner stops refusing. */
    accept(): void {
      refusing = false;
    },
    /** Settles once the first effect happened: when a scenario may hang up. */
    firstEffect,
    effects: () => lines().filter((l) => l.kind === "effect").length,
    runs: () => lines().filter((l) => l.kind === "run").length,
    /** The keys the owner was called with, one per run (`null`: none). */
    keys: () =>
      lines()
        .filter((l) => l.kind === "run")
        .map((l) => l.key),
  };
}
export type FakeOwner = ReturnType<typeof fakeOwner>;
