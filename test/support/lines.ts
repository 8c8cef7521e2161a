import { createInterface } from "node:readline";
import type { Readable } from "node:stream";

/** Reads a child's output a line at a time: `next()` resolves with the next line, whether it came already or not. */
export function lineReader(input: Readable): () => Promise<string> {
  const lines: string[] = [];
  const waiters: ((line: string) => void)[] = [];
  createInterface({ input }).on("line", (line) => {
    const waiter = waiters.shift();
    if (waiter) waiter(line);
    else lines.push(line);
  });
  return () =>
    new Promise<string>((resolve) => {
      const line = lines.shift();
      if (line !== undefined) resolve(line);
      else waiters.push(resolve);
    });
}
