/** The running Node's major version, for tests of peers whose engines exclude the oldest Node of the CI matrix. */
export const nodeMajor = Number(process.versions.node.split(".")[0]);

/**
 * The name suffix of a suite that needs at least Node `major`: on an older Node the suite is skipped, and Vitest's
 * report lists it by this name, so the skip says why instead of vanishing.
 */
export function needsNode(major: number, why: string): { skip: boolean; label: string } {
  const skip = nodeMajor < major;
  // On stdout: a skip by design on the oldest Node of the matrix, loud in the log, while stderr stays for faults.
  if (skip) console.log(`skipped on Node ${process.versions.node}: ${why} needs Node >= ${major}`);
  return { skip, label: skip ? skipLabel(`${why} needs Node >= ${major}`) : "" };
}

/** The Node of the matrix on which `.ci/run` runs the suites that need to run once per CI (its first leg). */
export const ONCE_IN_CI_ON = 24;

/**
 * The name suffix of a suite that runs once per CI, on its Node 24 leg: one that drives every runtime itself, or that
 * never runs the leg's Node (pytest under /usr/bin/python3), so another leg would repeat it to the letter. Outside
 * CI (`npm test` on any Node) it always runs.
 */
export function onceInCi(what: string): { skip: boolean; label: string } {
  const skip = process.env.CI === "true" && nodeMajor !== ONCE_IN_CI_ON;
  if (skip)
    console.log(
      `skipped on Node ${process.versions.node}: ${what} runs once, on CI's Node ${ONCE_IN_CI_ON} leg`,
    );
  return { skip, label: skip ? skipLabel(`run once, on CI's Node ${ONCE_IN_CI_ON} leg`) : "" };
}

/**
 * The suffix of a suite's name on a run that skips it by design. scripts/check-claims.mjs (SKIP_LABEL) reads it as
 * the same suite, which must still pass in some report: keep the two in step.
 */
const skipLabel = (reason: string) => ` (skipped: ${reason})`;
