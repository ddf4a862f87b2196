/**
 * `onlyRow()`: the one row of a statement that always returns one, or an
 * {@linkcode EmptyResultError} a caller can classify as transient.
 *
 * @module
 */

/**
 * A statement that always returns one row came back without one. postgres.js can resolve a
 * statement with an empty result when its connection is terminated under it; that result is no
 * answer, so callers count it as a transient error and retry the call.
 */
export class EmptyResultError extends Error {
  /** The SQL function whose row was missing. */
  readonly operation: string;

  /** @param operation The SQL function whose row was missing. */
  constructor(operation: string) {
    super(`Cannot read the result of ${operation}: the statement returned no row`);
    this.name = "EmptyResultError";
    this.operation = operation;
  }
}

/**
 * The one row of `rows`.
 *
 * @throws {EmptyResultError} When there is none (no first row, whatever the length says).
 */
export function onlyRow<T>(operation: string, rows: readonly T[]): T {
  // Not `rows.length`: postgres.js 3.4.9 resets its row counter only on CommandComplete, so when a
  // connection is terminated in the middle of a result, the first result on its replacement
  // can start with holes (length > 0, no row 0), as tests/worker/outage_test.ts once met.
  const row = rows[0];
  if (row === undefined) throw new EmptyResultError(operation);
  return row;
}
