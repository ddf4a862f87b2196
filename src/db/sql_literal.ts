/**
 * One-round-trip statements for the hot paths (the worker's claim, completion and failure
 * reports; the producer's start and wait), used by the query modules of this folder.
 *
 * With `prepare: false` (required behind Supabase's transaction pooler), postgres.js sends every
 * statement that has parameters as Parse/Describe first and Bind/Execute after the server
 * answered: two round trips. These statements are sent as parameterless simple queries instead,
 * with every value inlined through the functions below. Text always becomes an escape-string
 * literal (`E'...'`), whose meaning does not depend on `standard_conforming_strings`.
 *
 * @module
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A text literal: `E'...'` with backslashes and quotes doubled. */
export function textLiteral(value: string): string {
  if (typeof value !== "string") throw new TypeError(`Cannot quote ${typeof value} as text`);
  if (value.includes("\0")) throw new TypeError("Cannot quote text containing a NUL character");
  return `E'${value.replaceAll("\\", "\\\\").replaceAll("'", "''")}'`;
}

/**
 * `value` with what PostgreSQL `text` cannot hold replaced by U+FFFD: NUL characters and lone
 * UTF-16 surrogates. For texts whose content no caller controls (a handler's error message), so
 * that a report carrying them lands instead of throwing in {@linkcode textLiteral}.
 */
export function storableText(value: string): string {
  return value.replaceAll("\0", "\uFFFD").toWellFormed();
}

/** An integer literal. */
export function integerLiteral(value: number): string {
  if (!Number.isSafeInteger(value)) throw new RangeError(`Cannot quote ${value} as an integer`);
  return String(value);
}

/** A uuid literal. */
export function uuidLiteral(value: string): string {
  if (typeof value !== "string" || !UUID.test(value)) {
    throw new TypeError(`Cannot quote ${JSON.stringify(value)} as a uuid`);
  }
  return `'${value}'::uuid`;
}

/** A double precision literal, or `null`. */
export function numberLiteral(value: number | null): string {
  if (value === null) return "null::double precision";
  if (!Number.isFinite(value)) throw new RangeError(`Cannot quote ${value} as a number`);
  return `${value}::double precision`;
}

/**
 * postgres.js buffers a write shorter than 1024 bytes until `setImmediate`, which takes more than
 * a millisecond under Deno; a longer one goes out at once. The per-task statements are padded with
 * a trailing comment so that they are sent immediately.
 */
const IMMEDIATE_WRITE_BYTES = 1100;
const encoder = new TextEncoder();

/** `statement`, padded with a trailing comment to at least {@linkcode IMMEDIATE_WRITE_BYTES}. */
export function sentAtOnce(statement: string): string {
  const length = encoder.encode(statement).length;
  if (length >= IMMEDIATE_WRITE_BYTES) return statement;
  return `${statement}\n/*${" ".repeat(IMMEDIATE_WRITE_BYTES - length)}*/`;
}
