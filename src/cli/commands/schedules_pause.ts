/**
 * `deno task ops schedules pause <name>` and `schedules resume <name>`: stop a schedule's ticks,
 * and start them again from the next tick after the resumption.
 *
 * @module
 */

import { pauseSchedule, resumeSchedule } from "../../client/schedules.ts";
import { ScheduleNotFoundError } from "../../client/schedule_errors.ts";
import type { OpsCommand } from "./command_types.ts";

/**
 * The `schedules pause` command. Exits 0 whether or not it was paused already (it says which), 1
 * for an unknown name.
 *
 * @example Usage
 * ```ts ignore
 * import { schedulesPauseCommand } from "./schedules_pause.ts";
 *
 * await schedulesPauseCommand.run(sql, { positional: ["nightly"], json: false, options: {} }, io);
 * ```
 */
export const schedulesPauseCommand: OpsCommand = {
  name: "schedules pause",
  positional: ["name"],
  json: false,
  summary: "pause a schedule: no tick fires until it is resumed",
  description: "Calls sluice.pause_schedule. Runs already started are not touched.",
  async run(sql, args, io) {
    const [name] = args.positional;
    try {
      io.out(
        await pauseSchedule(sql, name)
          ? `Paused schedule ${JSON.stringify(name)}.`
          : `Schedule ${JSON.stringify(name)} was paused already; nothing changed.`,
      );
      return 0;
    } catch (error) {
      if (!(error instanceof ScheduleNotFoundError)) throw error;
      io.err(`Cannot pause schedule ${JSON.stringify(name)}: ${error.message}`);
      return 1;
    }
  },
};

/**
 * The `schedules resume` command. Exits 0 whether or not it was paused (it says which), 1 for an
 * unknown name.
 *
 * @example Usage
 * ```ts ignore
 * import { schedulesResumeCommand } from "./schedules_pause.ts";
 *
 * await schedulesResumeCommand.run(sql, { positional: ["nightly"], json: false, options: {} }, io);
 * ```
 */
export const schedulesResumeCommand: OpsCommand = {
  name: "schedules resume",
  positional: ["name"],
  json: false,
  summary: "resume a paused schedule from its next tick (the pause is not made up)",
  description: "Calls sluice.resume_schedule with the first tick after now: ticks that fell\n" +
    "in the pause are not made up (a pause is deliberate, not an outage).",
  async run(sql, args, io) {
    const [name] = args.positional;
    try {
      io.out(
        await resumeSchedule(sql, name)
          ? `Resumed schedule ${JSON.stringify(name)}.`
          : `Schedule ${JSON.stringify(name)} was not paused; nothing changed.`,
      );
      return 0;
    } catch (error) {
      if (!(error instanceof ScheduleNotFoundError)) throw error;
      io.err(`Cannot resume schedule ${JSON.stringify(name)}: ${error.message}`);
      return 1;
    }
  },
};
