/**
 * Which steps are waits (docs/waits.md): a sleep, a signal wait or a subflow step waits in the
 * database, with no task, no queued message and no worker, so the dashboard shows no queue,
 * attempts or timeout for it.
 *
 * @module
 */

/** The step types that wait in the database. */
export const WAIT_STEP_TYPES: readonly string[] = ["sleep", "signal", "subflow"];

/**
 * Whether a step of this type is a wait.
 *
 * @example Usage
 * ```ts
 * import { isWaitStep } from "./step_kinds.ts";
 *
 * isWaitStep("sleep"); // true
 * isWaitStep("map"); // false
 * ```
 */
export function isWaitStep(stepType: string): boolean {
  return WAIT_STEP_TYPES.includes(stepType);
}
