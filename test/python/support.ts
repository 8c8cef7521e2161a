import { execFileSync } from "node:child_process";

/** Debian's Python, never a pyenv shim: the package targets the python3 CI installs with apt-get. */
export const PYTHON = "/usr/bin/python3";

let checked: boolean | undefined;

/** Whether /usr/bin/python3 runs and imports pytest (python3-pytest). */
export function pythonReady(): boolean {
  if (checked === undefined) {
    try {
      execFileSync(PYTHON, ["-c", "import pytest"], { stdio: "ignore" });
      checked = true;
    } catch {
      checked = false;
    }
  }
  return checked;
}

/**
 * Fails the test when Python is missing: the cross-language tests are never skipped silently. Outside CI they are
 * skipped by the caller (`describe.skipIf`) with a loud line on stderr instead; see pytest.test.ts.
 */
export function requirePython(): void {
  if (!pythonReady()) {
    throw new Error(
      `${PYTHON} with pytest is missing: apt-get install python3-pytest python3-hypothesis python3-psycopg python3-redis python3-httpx`,
    );
  }
}

/**
 * Whether a file that needs Python is skipped: never under CI=true (`requirePython` then fails it when Python is
 * missing); elsewhere, without Python, yes, with one loud line naming the file.
 */
export function skipWithoutPython(file: string): boolean {
  if (pythonReady() || process.env.CI === "true") return false;
  console.warn(
    `== SKIPPED ${file}: ${PYTHON} with pytest is missing (apt-get install python3-pytest python3-hypothesis python3-psycopg python3-redis python3-httpx)`,
  );
  return true;
}
