/**
 * Runs `send` again, after an asynchronous pause each time, while it fails with an error `isBusy` says applied
 * nothing (another connection held the lock) and until `budgetMs` is spent; then the last error is thrown. Safe to
 * repeat for that reason only: any other error is thrown at once.
 */
export async function retryBusy<T>(
  send: () => Promise<T>,
  isBusy: ((error: unknown) => boolean) | undefined,
  budgetMs: number,
): Promise<T> {
  const started = performance.now();
  let pause = 2;
  for (;;) {
    try {
      return await send();
    } catch (error) {
      if (!isBusy?.(error) || performance.now() - started + pause > budgetMs) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, pause));
    pause = Math.min(pause * 2, 50);
  }
}
