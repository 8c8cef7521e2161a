/**
 * A DBOS system database URL for a fresh database of the test's. The session's idle-in-transaction timeout (DBOS's
 * default, 60 s) is set in the URL's startup options: without it, DBOS sets it with a `SET` queued on each new pooled
 * connection ahead of the borrower's first query, which pg 8 reports as a DeprecationWarning on stderr.
 */
export function dbosDatabaseUrl(serviceUrl: string, database: string): string {
  const url = new URL(serviceUrl);
  url.pathname = `/${database}`;
  url.searchParams.set("options", "-c idle_in_transaction_session_timeout=60000");
  return url.toString();
}
