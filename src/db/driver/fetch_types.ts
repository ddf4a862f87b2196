/**
 * The type-fetch policy of the pools sluice opens itself.
 *
 * @module
 */

import type { Sql } from "./postgres.ts";

/**
 * postgres.js fetches the server's array types as the first statement of every new connection and
 * drops that promise: a connection terminated at that moment surfaces as an unhandled rejection
 * that no caller can catch (porsager/postgres#1192, #1223). The types are stored on the pool's
 * shared options once fetched, so after the first query of a pool sluice owns, reconnections
 * skip the fetch and the window closes. Call it after the first query of a pool sluice opened.
 *
 * @param sql A pool opened by `connect()`.
 */
export function stopRefetchingTypes(sql: Sql): void {
  (sql.options as { fetch_types: boolean }).fetch_types = false;
}
