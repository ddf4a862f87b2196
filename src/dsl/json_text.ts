/**
 * The one JSON rule of sluice, for everything stored as `jsonb`: run inputs (`startFlow`), step
 * outputs (the worker) and condition patterns (the DSL). A value is accepted when it survives a
 * JSON round trip unchanged and Postgres can store it: plain objects, arrays, strings, finite
 * numbers, booleans and `null`, where an object property may be `undefined` (it arrives as a
 * missing key, as with `JSON.stringify`). Rejected, with the path that holds it: `NaN` and
 * `±Infinity`, `undefined` anywhere else, functions, symbols and symbol keys, `bigint`, class
 * instances (`Date`, `Map`, ...), cycles, and strings or keys holding `\u0000` or a lone UTF-16
 * surrogate (`jsonb` cannot store either).
 *
 * @module
 */

import { JsonSizeError, JsonValueError } from "./errors.ts";

export { DEFAULT_MAX_JSON_BYTES } from "./limits.ts";

/** Where a value breaks the JSON rule, and how. */
export interface JsonProblem {
  /** Where the value sits, from the root name given: `input.lines[2]["unit price"]`. */
  readonly path: string;
  /** What is wrong there, e.g. `NaN is not JSON`. */
  readonly detail: string;
}

/**
 * Finds the first place where `value` breaks the JSON rule (see the module documentation), or
 * returns `undefined` when it follows it.
 *
 * @param value The value to check.
 * @param root The name of the value in paths, e.g. `input`.
 */
export function findJsonProblem(value: unknown, root: string): JsonProblem | undefined {
  return problemAt(value, root, new Set());
}

/**
 * Checks `value` against the JSON rule and its size limit, and returns its JSON text.
 *
 * @param value The value to store.
 * @param options `action` starts error messages (`Cannot start flow "orders"`), `root` names
 * the value in paths, `maxBytes` is the largest JSON text accepted, in UTF-8 bytes.
 * @throws {JsonValueError} When the value breaks the JSON rule.
 * @throws {JsonSizeError} When its JSON text is larger than `maxBytes`.
 */
export function toJsonText(
  value: unknown,
  options: { readonly action: string; readonly root: string; readonly maxBytes: number },
): string {
  const problem = findJsonProblem(value, options.root);
  if (problem !== undefined) throw new JsonValueError(options.action, problem.path, problem.detail);
  const text = JSON.stringify(value);
  // UTF-8 never takes fewer bytes than UTF-16 code units: most texts need no exact count.
  if (text.length > options.maxBytes || utf8Length(text) > options.maxBytes) {
    throw new JsonSizeError(options.action, options.root, utf8Length(text), options.maxBytes);
  }
  return text;
}

/**
 * The input of a start by name (`startFlow(sql, "orders", input)`, `startRun(supabase, "orders",
 * input)`): a string holding the JSON text of an object or an array is that object or array, as
 * a request body or a command-line argument passed on unparsed means; any other value is itself.
 * (A start with the flow object is typed and takes its input as given.)
 *
 * @example Usage
 * ```ts
 * import { inputByName } from "./json_text.ts";
 *
 * inputByName('{"orderId": 7}'); // { orderId: 7 }
 * inputByName("Ada"); // "Ada"
 * ```
 */
export function inputByName(input: unknown): unknown {
  if (typeof input !== "string" || !/^\s*[[{]/.test(input)) return input;
  try {
    return JSON.parse(input);
  } catch {
    // Not JSON text: a string input that happens to start with a bracket.
    return input;
  }
}

/**
 * Checks a size limit option: a positive integer number of bytes.
 *
 * @param value The option's value.
 * @param describe Names the option in the error, e.g. `Cannot start flow "x": maxInputBytes`.
 * @throws {RangeError} When it is not a positive integer.
 */
export function assertMaxBytes(value: unknown, describe: string): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(`${describe} must be a positive integer of bytes, got ${String(value)}`);
  }
  return value;
}

function problemAt(value: unknown, path: string, ancestors: Set<object>): JsonProblem | undefined {
  switch (typeof value) {
    case "boolean":
      return undefined;
    case "string":
      return stringProblem(value, path, "the string");
    case "number":
      return Number.isFinite(value) ? undefined : { path, detail: `${value} is not JSON` };
    case "object":
      return value === null ? undefined : objectProblem(value, path, ancestors);
    case "bigint":
      return { path, detail: `a bigint (${value}n) is not JSON` };
    default:
      return {
        path,
        detail: `${value === undefined ? "undefined" : `a ${typeof value}`} is not JSON`,
      };
  }
}

const isEnumerable = Object.prototype.propertyIsEnumerable;

function objectProblem(
  value: object,
  path: string,
  ancestors: Set<object>,
): JsonProblem | undefined {
  if (ancestors.has(value)) return { path, detail: "a cycle is not JSON" };
  if (Array.isArray(value)) {
    ancestors.add(value);
    for (let index = 0; index < value.length; index++) {
      const problem = problemAt(value[index], `${path}[${index}]`, ancestors);
      if (problem !== undefined) return problem;
    }
    ancestors.delete(value);
    return undefined;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) {
    const name: unknown = value.constructor?.name;
    const what = typeof name === "string" && name !== "" ? `an instance of ${name}` : "an object";
    return { path, detail: `${what} is not JSON (only plain objects and arrays are)` };
  }
  if (Object.getOwnPropertySymbols(value).some((key) => isEnumerable.call(value, key))) {
    return { path, detail: "a symbol key is not JSON" };
  }
  ancestors.add(value);
  for (const [key, item] of Object.entries(value)) {
    const at = `${path}${propertyPath(key)}`;
    const keyProblem = stringProblem(key, at, "the key");
    if (keyProblem !== undefined) return keyProblem;
    // An undefined property is a missing key, as JSON.stringify and the Json types have it.
    if (item === undefined) continue;
    const problem = problemAt(item, at, ancestors);
    if (problem !== undefined) return problem;
  }
  ancestors.delete(value);
  return undefined;
}

function stringProblem(text: string, path: string, what: string): JsonProblem | undefined {
  if (text.includes("\u0000")) {
    return { path, detail: `${what} holds \\u0000, which Postgres cannot store in jsonb` };
  }
  if (!text.isWellFormed()) {
    return {
      path,
      detail: `${what} holds a lone UTF-16 surrogate, which Postgres cannot store in jsonb`,
    };
  }
  return undefined;
}

/**
 * A key as a path segment: `.name` for an identifier-like key, `["other key"]` otherwise.
 *
 * @example Usage
 * ```ts
 * import { propertyPath } from "./json_text.ts";
 *
 * propertyPath("unit price"); // '["unit price"]'
 * ```
 */
export function propertyPath(key: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

/** The length of `text` in UTF-8 bytes, without encoding it. */
function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      // A surrogate pair (the text is well-formed): one 4-byte code point.
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}
