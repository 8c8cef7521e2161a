import { GCProfiler, getHeapStatistics } from "node:v8";

type MinorGc = (options: { type: "minor" }) => void;

/** The `gc` that node's `--expose-gc` installs, or a thrown error naming the section that needs it. */
export function exposedGc(section: string): MinorGc {
  const gc = (globalThis as { gc?: MinorGc }).gc;
  if (gc === undefined) throw new Error(`${section}: run with --expose-gc (npm run bench ${section} does)`);
  return gc;
}

/**
 * Starts counting the bytes allocated on the V8 heap; the function returned stops and gives the count. What the
 * collections that ran meanwhile freed was allocated too, so it is added to the heap's growth.
 */
export function countAllocations(gc: MinorGc): () => number {
  // A scavenge, not a full collection: that one also drops compiled code and feedback, which the requests then
  // rebuild, ~250 KB counted against them.
  gc({ type: "minor" });
  const profiler = new GCProfiler();
  profiler.start();
  const before = getHeapStatistics().used_heap_size;
  return () => {
    const after = getHeapStatistics().used_heap_size;
    let freed = 0;
    for (const { beforeGC, afterGC } of profiler.stop()?.statistics ?? []) {
      freed += beforeGC.heapStatistics.usedHeapSize - afterGC.heapStatistics.usedHeapSize;
    }
    return after - before + freed;
  };
}
