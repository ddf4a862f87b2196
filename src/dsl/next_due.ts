/**
 * The next due times of a stored schedule as a sweep computes them: croner's answer, or the
 * problem that pauses the schedule (docs/schedules.md).
 *
 * @module
 */

import { type DueTimes, scheduleDueTimes } from "./schedule_times.ts";

/**
 * The first two ticks after `after`, or why there are none: the expression never fires again,
 * or it (or the time zone) does not parse. What a sweep stores for a schedule awaiting its next
 * due time; a problem pauses the schedule (docs/schedules.md).
 *
 * @param cron The stored expression.
 * @param timezone The stored time zone.
 * @param after The time after which to look.
 * @returns The due times, or `{ problem }`.
 */
export function nextDueOrProblem(
  cron: string,
  timezone: string,
  after: Date,
): DueTimes | { readonly problem: string } {
  try {
    return scheduleDueTimes(cron, timezone, after) ??
      { problem: `it never fires after ${after.toISOString()}` };
  } catch (error) {
    return { problem: error instanceof Error ? error.message : String(error) };
  }
}
