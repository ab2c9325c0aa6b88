/**
 * The cause of a failed LMDB write. When a commit fails, lmdb-js rejects each write of it
 * with a generic "Commit failed" whose `commitError` is a second promise, rejected with
 * the actual error (EIO, ENOSPC, ...). Nobody else listens to that promise: left alone
 * it is an unhandled rejection that ends the thread. This takes it over and returns the
 * actual error.
 */
export async function writeFailure(err: unknown): Promise<Error> {
  const cause = (err as { commitError?: unknown } | null)?.commitError;
  if (cause && typeof (cause as Promise<unknown>).then === 'function') {
    try {
      await cause;
    } catch (actual) {
      return actual instanceof Error ? actual : new Error(String(actual));
    }
  }
  return err instanceof Error ? err : new Error(String(err));
}
