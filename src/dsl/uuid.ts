/**
 * The run-id check shared by every entry point that takes a run id (client, browser client,
 * dashboard): one definition of what a UUID looks like, no I/O.
 *
 * @module
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Whether `value` is a UUID string (any case).
 *
 * @example Usage
 * ```ts ignore
 * import { isUuid } from "./uuid.ts";
 *
 * isUuid("6f1c0c2e-8f5e-4a43-9d43-2f7f6a0f0d11"); // true
 * ```
 */
export function isUuid(value: unknown): value is string {
  return typeof value === "string" && UUID.test(value);
}

/**
 * Throws a TypeError starting with `what` unless `value` is a UUID string.
 *
 * @throws {TypeError} `<what>: the run id must be a UUID, got <value>`.
 *
 * @example Usage
 * ```ts ignore
 * import { assertUuid } from "./uuid.ts";
 *
 * assertUuid("nope", "Cannot get run"); // throws
 * ```
 */
export function assertUuid(value: unknown, what: string): asserts value is string {
  if (!isUuid(value)) {
    throw new TypeError(`${what}: the run id must be a UUID, got ${describe(value)}`);
  }
}

function describe(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(value) : typeof value;
}
