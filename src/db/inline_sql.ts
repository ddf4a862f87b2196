/**
 * One-round-trip statements for the hot paths (the worker's claim, completion and failure
 * reports; the producer's start and wait), used by the query modules of this folder.
 *
 * With `prepare: false` (required behind Supabase's transaction pooler), postgres.js sends every
 * statement that has parameters as Parse/Describe first and Bind/Execute after the server
 * answered: two round trips. These statements are sent as parameterless simple queries instead
 * ({@linkcode simpleQuery}), written with the tag {@linkcode inline}, which quotes every value by
 * its type: no statement is assembled by hand. Text always becomes an escape-string literal
 * (`E'...'`), whose meaning does not depend on `standard_conforming_strings`.
 *
 * @module
 */

import type { PendingQuery, Queryable } from "./driver/postgres.ts";

/** A statement, or a piece of one, with every value inlined; made only by this module. */
export class InlineSql {
  readonly #text: string;
  private constructor(text: string) {
    this.#text = text;
  }
  /** The SQL text. */
  get text(): string {
    return this.#text;
  }
  /** Wraps text this module produced (a quoted value or a composed statement). */
  static of(text: string): InlineSql {
    return new InlineSql(text);
  }
}

/**
 * What {@linkcode inline} accepts: text (an `E'...'` literal), a finite number (a numeric
 * constant), a boolean, `null`, or an {@linkcode InlineSql} from {@linkcode inline},
 * {@linkcode uuid} or {@linkcode jsonb} (spliced as it is).
 */
export type InlineValue = string | number | boolean | null | InlineSql;

/** A text literal: `E'...'` with backslashes and quotes doubled; NUL cannot be quoted. */
function textLiteral(value: string): string {
  if (value.includes("\0")) {
    throw new TypeError(`Cannot quote text containing a NUL character: ${JSON.stringify(value)}`);
  }
  return `E'${value.replaceAll("\\", "\\\\").replaceAll("'", "''")}'`;
}

/** A numeric constant; a negative one in parentheses, so that `-` never joins a `-` before it. */
function numberLiteral(value: number): string {
  if (!Number.isFinite(value) || (Number.isInteger(value) && !Number.isSafeInteger(value))) {
    throw new RangeError(`Cannot quote ${value} as a number: not finite or not a safe integer`);
  }
  return value < 0 || Object.is(value, -0) ? `(${value})` : String(value);
}

function literal(value: InlineValue): string {
  if (value instanceof InlineSql) return value.text;
  if (value === null) return "null";
  switch (typeof value) {
    case "string":
      return textLiteral(value);
    case "number":
      return numberLiteral(value);
    case "boolean":
      return value ? "true" : "false";
    default:
      throw new TypeError(`Cannot quote a ${typeof value} in SQL: ${String(value)}`);
  }
}

/**
 * The tag of every inlined statement: the template's text with each value quoted by its type
 * (see {@linkcode InlineValue}).
 *
 * @example
 * ```ts ignore
 * inline`select sluice.stop_worker(${uuid(workerId)}, ${attempt})`;
 * ```
 */
export function inline(strings: TemplateStringsArray, ...values: InlineValue[]): InlineSql {
  let text = strings[0];
  values.forEach((value, index) => {
    text += literal(value) + strings[index + 1];
  });
  return InlineSql.of(text);
}

/** An integer value; anything but a safe integer is refused. */
export function integer(value: number): InlineSql {
  if (!Number.isSafeInteger(value)) {
    throw new RangeError(`Cannot quote ${value} as an integer: not a safe integer`);
  }
  return InlineSql.of(numberLiteral(value));
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A `uuid` value: `'...'::uuid`, or `null::uuid`. */
export function uuid(value: string | null): InlineSql {
  if (value === null) return InlineSql.of("null::uuid");
  if (typeof value !== "string" || !UUID.test(value)) {
    throw new TypeError(`Cannot quote ${JSON.stringify(value)} as a uuid`);
  }
  return InlineSql.of(`'${value}'::uuid`);
}

/** JSON text serialized before (a handler's output), spliced into a {@linkcode jsonb} value. */
export class SerializedJson {
  /** @param text Valid JSON text (the caller serialized it, e.g. with `toJsonText`). */
  constructor(readonly text: string) {}
}

/** A value {@linkcode jsonb} composes: JSON data, with serialized pieces anywhere inside. */
export type JsonInput =
  | string
  | number
  | boolean
  | null
  | SerializedJson
  | readonly JsonInput[]
  | { readonly [key: string]: JsonInput | undefined };

/** `value` as JSON text; an object's `undefined` property is left out, as by `JSON.stringify`. */
export function jsonText(value: JsonInput): string {
  if (value instanceof SerializedJson) return value.text;
  if (Array.isArray(value)) return `[${value.map(jsonText).join(",")}]`;
  if (typeof value === "number" && !Number.isFinite(value)) {
    throw new RangeError(`Cannot write ${value} as JSON`);
  }
  if (value !== null && typeof value === "object") {
    const fields = Object.entries(value)
      .filter(([, field]) => field !== undefined)
      .map(([key, field]) => `${JSON.stringify(key)}:${jsonText(field as JsonInput)}`);
    return `{${fields.join(",")}}`;
  }
  return JSON.stringify(value);
}

/** A `jsonb` value: the JSON text of `value` as an `E'...'::jsonb` literal. */
export function jsonb(value: JsonInput): InlineSql {
  return InlineSql.of(`${textLiteral(jsonText(value))}::jsonb`);
}

/**
 * `value` with what PostgreSQL `text` cannot hold replaced by U+FFFD: NUL characters and lone
 * UTF-16 surrogates. For texts whose content no caller controls (a handler's error message), so
 * that a report carrying them lands instead of throwing in {@linkcode inline}.
 */
export function storableText(value: string): string {
  return value.replaceAll("\0", "\uFFFD").toWellFormed();
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

/**
 * Sends `statement` as one parameterless simple query, written at once: one round trip. The
 * returned query can be cancelled.
 */
// deno-lint-ignore no-explicit-any
export function simpleQuery<T extends any[]>(
  sql: Queryable,
  statement: InlineSql,
): PendingQuery<T> {
  return sql.unsafe<T>(sentAtOnce(statement.text));
}
