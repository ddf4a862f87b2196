/**
 * Keeps postgres.js's dropped type fetch from killing the process.
 *
 * postgres.js 3.4.9 fetches the server's array types as the first statement of a new connection
 * (`fetch_types`, on by default) and drops that promise. A connection terminated at that moment
 * (`pg_terminate_backend`, a server restart, a reset socket) rejects it with nobody listening: an
 * unhandled rejection, which ends a Deno process (porsager/postgres#1192, #1223). The queries
 * queued behind the fetch are rejected with the same error and reach their callers, and the next
 * connection fetches the types again, so dropping this one rejection loses nothing.
 *
 * The guard is one `unhandledrejection` listener per process, covering every pool: the ones
 * sluice opens (`connect()`, a worker's own pool) and the ones a caller hands in. It only
 * swallows a rejection whose error postgres.js tagged with the type-fetch statement; any other
 * unhandled rejection keeps Deno's default.
 *
 * @module
 */

const INSTALLED = Symbol.for("sluice.typeFetchGuard");

/** A fragment of the statement postgres.js runs in `fetchArrayTypes` (connection.js). */
const TYPE_FETCH = "select b.oid, b.typarray";

/**
 * Whether a rejection reason comes from postgres.js's dropped array-type fetch.
 *
 * @param reason The rejection reason.
 * @returns True for an error postgres.js tagged with the type-fetch statement.
 */
export function isTypeFetchRejection(reason: unknown): boolean {
  if (typeof reason !== "object" || reason === null) return false;
  const query = (reason as { query?: unknown }).query;
  return typeof query === "string" && query.includes(TYPE_FETCH);
}

/**
 * Installs the guard (see the module documentation). Idempotent, also across several copies of
 * sluice in one process; does nothing where the runtime has no `addEventListener`.
 */
export function installTypeFetchGuard(): void {
  const globals = globalThis as unknown as { [INSTALLED]?: true };
  if (globals[INSTALLED] || typeof globalThis.addEventListener !== "function") return;
  globalThis.addEventListener("unhandledrejection", (event) => {
    if (isTypeFetchRejection(event.reason)) event.preventDefault();
  });
  globals[INSTALLED] = true;
}
