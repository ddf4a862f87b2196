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
 * import { MAX_SLUG_LENGTH } from "@sluice/sluice/admin";
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
 * import { RESERVED_STEP_SLUGS } from "@sluice/sluice/admin";
 *
 * console.log(RESERVED_STEP_SLUGS.includes("run")); // true
 * ```
 */
export const RESERVED_STEP_SLUGS: readonly string[] = Object.freeze(["run"]);

/**
 * Describes why `slug` breaks the slug rules, or returns `undefined` when it follows them. The
 * builders check every slug with it; code generation checks again before a slug becomes a path.
 *
 * @param slug The flow or step slug.
 * @returns What is wrong, or `undefined`.
 *
 * @example Usage
 * ```ts
 * import { slugProblem } from "@sluice/sluice/admin";
 *
 * console.log(slugProblem("orders")); // undefined
 * console.log(slugProblem("x/../y")); // "a slug may only contain letters, digits and underscores"
 * ```
 */
export function slugProblem(slug: string): string | undefined {
  if (typeof slug !== "string") return `a slug must be a string, got ${typeof slug}`;
  if (!/^[a-zA-Z]/.test(slug)) return "a slug must start with a letter";
  if (!/^[a-zA-Z0-9_]+$/.test(slug)) {
    return "a slug may only contain letters, digits and underscores";
  }
  if (slug.includes("__")) return 'a slug must not contain "__"';
  if (slug.endsWith("_")) return 'a slug must not end with "_"';
  if (slug.length > MAX_SLUG_LENGTH) {
    return `a slug must be at most ${MAX_SLUG_LENGTH} characters, got ${slug.length}`;
  }
  return undefined;
}
