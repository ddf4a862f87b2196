/**
 * Errors of the schedule functions (`src/client/schedules.ts`).
 *
 * @module
 */

/**
 * Thrown by `schedule()` when a schedule of that name exists with other settings; nothing
 * changed. Delete it first (`deleteSchedule`), or choose another name.
 *
 * @example Usage
 * ```ts ignore
 * import { connect } from "@sluice/sluice";
 * import { schedule, ScheduleExistsError } from "@sluice/sluice/admin";
 *
 * try {
 *   await schedule(connect(Deno.env.get("DATABASE_URL")!), "orders", { cron: "0 * * * *", input: {} });
 * } catch (error) {
 *   if (error instanceof ScheduleExistsError) console.error(error.differences);
 * }
 * ```
 */
export class ScheduleExistsError extends Error {
  /** Always `"ScheduleExistsError"`. */
  override name = "ScheduleExistsError";
  /** The schedule's name. */
  readonly scheduleName: string;
  /** What differs between the stored schedule and the one asked for, one entry each. */
  readonly differences: readonly string[];

  /**
   * @param scheduleName The schedule's name.
   * @param differences What differs.
   */
  constructor(scheduleName: string, differences: readonly string[]) {
    super(
      `Cannot schedule ${JSON.stringify(scheduleName)}: a schedule of that name exists with ` +
        `other settings (${differences.join("; ")}); delete it first or choose another name`,
    );
    this.scheduleName = scheduleName;
    this.differences = Object.freeze([...differences]);
  }
}

/**
 * Thrown when pausing or resuming a schedule that does not exist.
 *
 * @example Usage
 * ```ts ignore
 * import { connect } from "@sluice/sluice";
 * import { pauseSchedule, ScheduleNotFoundError } from "@sluice/sluice/admin";
 *
 * try {
 *   await pauseSchedule(connect(Deno.env.get("DATABASE_URL")!), "nightly");
 * } catch (error) {
 *   if (error instanceof ScheduleNotFoundError) console.error(error.scheduleName);
 * }
 * ```
 */
export class ScheduleNotFoundError extends Error {
  /** Always `"ScheduleNotFoundError"`. */
  override name = "ScheduleNotFoundError";
  /** The name given. */
  readonly scheduleName: string;

  /**
   * @param scheduleName The name given.
   * @param options The database error, as `cause`.
   */
  constructor(scheduleName: string, options?: ErrorOptions) {
    super(
      `No schedule ${JSON.stringify(scheduleName)}: list them with \`ops schedules list\``,
      options,
    );
    this.scheduleName = scheduleName;
  }
}
