/** What `promise` rejects with; throws if it resolves, so a test that expects a failure cannot pass without one. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}
