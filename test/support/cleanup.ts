/**
 * What a test started (a server process, a temp dir) is stopped in `afterAll` and, should the test process die
 * first, on its exit: each registered undo runs once, synchronously at exit.
 */
const undos = new Set<() => void>();
let hooked = false;

export function onCleanup(undo: () => void): () => void {
  if (!hooked) {
    hooked = true;
    process.once("exit", runAll);
    for (const signal of ["SIGINT", "SIGTERM"] as const) {
      process.once(signal, () => {
        runAll();
        process.kill(process.pid, signal);
      });
    }
  }
  let done = false;
  const once = () => {
    if (done) return;
    done = true;
    undos.delete(once);
    try {
      undo();
    } catch {
      // Best effort: the process may already be gone.
    }
  };
  undos.add(once);
  return once;
}

function runAll(): void {
  for (const undo of [...undos]) undo();
}
