/**
 * Run input validation with a Standard Schema validator (https://standardschema.dev): any object
 * with a `~standard` property whose `validate` checks a value, as zod, valibot and arktype
 * schemas are. The interfaces are the specification's, written out here so that sluice depends
 * on no validation library; a schema of any of them fits them structurally.
 *
 * @module
 */

import { InputValidationError } from "./errors.ts";
import { propertyPath } from "./json_text.ts";

/**
 * A Standard Schema (version 1): what `new Flow({ slug, input: schema })` takes.
 *
 * @typeParam Input The type the schema accepts (what a producer passes to `startFlow`).
 * @typeParam Output The type it produces (what the flow's steps receive).
 *
 * @example Usage
 * ```ts
 * import type { StandardSchemaV1 } from "@sluice/sluice";
 *
 * const positive: StandardSchemaV1<number> = {
 *   "~standard": {
 *     version: 1,
 *     vendor: "example",
 *     validate: (value) =>
 *       typeof value === "number" && value > 0
 *         ? { value }
 *         : { issues: [{ message: "must be a positive number" }] },
 *   },
 * };
 * ```
 */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  /** The Standard Schema properties. */
  readonly "~standard": StandardSchemaProps<Input, Output>;
}

/**
 * The `~standard` property of a {@linkcode StandardSchemaV1}.
 *
 * @example Usage
 * ```ts
 * import type { StandardSchemaProps } from "@sluice/sluice";
 *
 * const props: StandardSchemaProps<string> = {
 *   version: 1,
 *   vendor: "example",
 *   validate: (value) => typeof value === "string" ? { value } : { issues: [{ message: "no" }] },
 * };
 * ```
 */
export interface StandardSchemaProps<Input = unknown, Output = Input> {
  /** The version of the specification: 1. */
  readonly version: 1;
  /** The library that made the schema, e.g. `zod`. */
  readonly vendor: string;
  /** Checks a value: its (possibly transformed) value, or the issues found. */
  readonly validate: (
    value: unknown,
  ) => StandardSchemaResult<Output> | Promise<StandardSchemaResult<Output>>;
  /** Type-only: the schema's input and output types. */
  readonly types?: StandardSchemaTypes<Input, Output> | undefined;
}

/**
 * What `validate` returns: the value, or the issues.
 *
 * @example Usage
 * ```ts
 * import type { StandardSchemaResult } from "@sluice/sluice";
 *
 * const failed: StandardSchemaResult<number> = { issues: [{ message: "Required", path: ["n"] }] };
 * ```
 */
export type StandardSchemaResult<Output> =
  | { readonly value: Output; readonly issues?: undefined }
  | { readonly issues: readonly StandardSchemaIssue[] };

/**
 * One problem `validate` found.
 *
 * @example Usage
 * ```ts
 * import type { StandardSchemaIssue } from "@sluice/sluice";
 *
 * const issue: StandardSchemaIssue = { message: "Expected number", path: ["lines", 0, "price"] };
 * ```
 */
export interface StandardSchemaIssue {
  /** What is wrong. */
  readonly message: string;
  /** Where: keys and indexes from the root, bare or as `{ key }` segments. */
  readonly path?: readonly (PropertyKey | { readonly key: PropertyKey })[] | undefined;
}

/**
 * The type-only `types` of a schema's `~standard` property.
 *
 * @example Usage
 * ```ts
 * import type { StandardSchemaTypes } from "@sluice/sluice";
 *
 * type Types = StandardSchemaTypes<{ id: string }, { id: string }>;
 * ```
 */
export interface StandardSchemaTypes<Input = unknown, Output = Input> {
  /** The type the schema accepts. */
  readonly input: Input;
  /** The type it produces. */
  readonly output: Output;
}

/** Whether `value` is a Standard Schema: an object with `~standard.validate` of version 1. */
export function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  const props = (value as { "~standard"?: unknown } | null)?.["~standard"] as
    | { version?: unknown; validate?: unknown }
    | undefined;
  return (typeof value === "object" || typeof value === "function") && value !== null &&
    typeof props === "object" && props !== null && props.version === 1 &&
    typeof props.validate === "function";
}

/** An issue's path from `input`: `input.lines[2]["unit price"]`. */
function issuePath(issue: StandardSchemaIssue): string {
  let path = "input";
  for (const segment of issue.path ?? []) {
    const key = typeof segment === "object" && segment !== null ? segment.key : segment;
    path += typeof key === "number"
      ? `[${key}]`
      : typeof key === "symbol"
      ? `[${key.toString()}]`
      : propertyPath(key);
  }
  return path;
}

/**
 * Validates a run input with a flow's input schema and returns the schema's value (its output,
 * which a transforming schema may have changed).
 *
 * @param schema The flow's input schema.
 * @param value The input.
 * @param flowSlug The flow, for the error.
 * @param action What could not be done, e.g. `Cannot start flow "orders"`.
 * @throws {InputValidationError} With every issue the schema found, each with its path.
 */
export async function validateInput(
  schema: StandardSchemaV1,
  value: unknown,
  flowSlug: string,
  action: string,
): Promise<unknown> {
  const result = await schema["~standard"].validate(value);
  if (result.issues === undefined) return result.value;
  const issues = result.issues.map((issue) => ({
    path: issuePath(issue),
    message: String(issue.message),
  }));
  throw new InputValidationError(action, flowSlug, issues);
}
