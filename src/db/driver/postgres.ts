/**
 * The postgres.js driver, pinned here by its full npm specifier: a package loaded from a remote
 * URL gets no import map, so a bare `postgres` would not resolve in a user's project. Every other
 * module imports the driver (and its types) from this one.
 *
 * @module
 */

// deno-lint-ignore no-import-prefix
import postgres from "npm:postgres@3.4.9";
import { installCancellableImmediate } from "./cancellable_immediate.ts";
import { installTypeFetchGuard } from "./type_fetch_guard.ts";

// Before any client exists: under Deno 2.5 a write buffered by the driver can otherwise run after
// it was cancelled and kill the process (see cancellable_immediate.ts).
installCancellableImmediate();
// A connection cut during the driver's dropped type fetch must not kill the process either, for
// every pool sluice opens or is handed (see type_fetch_guard.ts).
installTypeFetchGuard();

export default postgres;

/** A postgres.js client (a pool). */
// deno-lint-ignore ban-types
export type Sql<T extends Record<string, unknown> = {}> = postgres.Sql<T>;

/** The client of one postgres.js transaction. */
// deno-lint-ignore ban-types
export type TransactionSql<T extends Record<string, unknown> = {}> = postgres.TransactionSql<T>;

/**
 * A client or the client of a transaction (`sql.begin(async (tx) => ...)`): what a producer
 * statement runs on, so a run can start in the same transaction as the caller's own writes.
 */
export type Queryable = Sql | TransactionSql;

/** A statement sent and not answered yet: awaitable for its rows, and cancellable. */
export type PendingQuery<T extends readonly postgres.MaybeRow[]> = postgres.PendingQuery<T>;
