/**
 * Slug rules shared by flows and steps.
 *
 * A slug starts with a letter, contains only `[a-zA-Z0-9_]`, never contains `__` (the separator of
 * generated queue names), does not end with `_`, and is at most {@linkcode MAX_SLUG_LENGTH}
 * characters long. Step slugs are unique per flow case-insensitively, and `run` is reserved.
 *
 * @module
 */

/**
 * The maximum length of a flow or step slug. Queue names are shorter still (see
 * `MAX_QUEUE_NAME_LENGTH`): a plain flow's slug becomes its queue name, and step queues combine
 * both slugs, falling back to the step index when the combination is too long.
 *
 * @example Usage
 * ```ts
 * import { MAX_SLUG_LENGTH } from "@sluice/sluice";
 *
 * console.log(MAX_SLUG_LENGTH); // 128
 * ```
 */
export const MAX_SLUG_LENGTH = 128;

/**
 * Step slugs that cannot be used (compared case-insensitively).
 *
 * @example Usage
 * ```ts
 * import { RESERVED_STEP_SLUGS } from "@sluice/sluice";
 *
 * console.log(RESERVED_STEP_SLUGS.includes("run")); // true
 * ```
 */
export const RESERVED_STEP_SLUGS: readonly string[] = Object.freeze(["run"]);
