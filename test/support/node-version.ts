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
  return { skip, label: skip ? ` (skipped: ${why} needs Node >= ${major})` : "" };
}
