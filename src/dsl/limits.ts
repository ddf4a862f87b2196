/**
 * The default size limits of a flow, the one TypeScript source of the values the database
 * enforces (`sluice.default_max_json_bytes()`, `sluice.default_max_map_tasks()`; docs/sql.md#limits).
 * A flow changes them with the `maxInputBytes`, `maxOutputBytes` and `maxMapTasks` options.
 *
 * @module
 */

/**
 * The default limit of a run input or a step output as JSON text: 16 MiB.
 *
 * @example Usage
 * ```ts
 * import { DEFAULT_MAX_JSON_BYTES } from "@sluice/sluice";
 *
 * console.log(DEFAULT_MAX_JSON_BYTES); // 16777216
 * ```
 */
export const DEFAULT_MAX_JSON_BYTES = 16 * 1024 * 1024;

/**
 * The default limit of tasks one map step may fan out to: 10,000. One start or completion then
 * writes at most 10,000 task rows and queue messages in one transaction (seconds, not minutes,
 * of locks and WAL); a flow that needs wider maps raises `maxMapTasks`.
 *
 * @example Usage
 * ```ts
 * import { DEFAULT_MAX_MAP_TASKS } from "@sluice/sluice";
 *
 * console.log(DEFAULT_MAX_MAP_TASKS); // 10000
 * ```
 */
export const DEFAULT_MAX_MAP_TASKS = 10_000;

/**
 * Size limits of a flow, enforced by the database on every start and completion (runtime options:
 * a restart of the flow's workers changes them without a new flow version). Sizes count the JSON
 * text PostgreSQL prints for the `jsonb` value (docs/sql.md#limits).
 *
 * @example Usage
 * ```ts
 * import type { FlowLimitOptions } from "@sluice/sluice";
 *
 * const options: FlowLimitOptions = { maxInputBytes: 1_000_000, maxMapTasks: 50_000 };
 * ```
 */
export interface FlowLimitOptions {
  /** The largest run input, in bytes of JSON (integer >= 1). @default {16777216} */
  readonly maxInputBytes?: number;
  /** The largest step output, in bytes of JSON (integer >= 1). @default {16777216} */
  readonly maxOutputBytes?: number;
  /** The most tasks one map step fans out to (integer >= 1). @default {10000} */
  readonly maxMapTasks?: number;
}
