/**
 * `deno task ops schedules delete <name>`: removes a schedule and its tick history; the runs it
 * started stay.
 *
 * @module
 */

import { deleteSchedule } from "../../client/schedules.ts";
import type { OpsCommand } from "./command_types.ts";

/**
 * The `schedules delete` command. Exits 0 when the schedule is gone, 1 when there was none of that
 * name (most likely a typo).
 *
 * @example Usage
 * ```ts ignore
 * import { schedulesDeleteCommand } from "./schedules_delete.ts";
 *
 * await schedulesDeleteCommand.run(sql, { positional: ["nightly"], json: false, options: {} }, io);
 * ```
 */
export const schedulesDeleteCommand: OpsCommand = {
  name: "schedules delete",
  positional: ["name"],
  json: false,
  summary: "delete a schedule and its tick history (its runs stay)",
  description: "Calls sluice.delete_schedule. Runs the schedule started are not touched.",
  async run(sql, args, io) {
    const [name] = args.positional;
    if (!(await deleteSchedule(sql, name))) {
      io.err(
        `Cannot delete schedule ${JSON.stringify(name)}: no such schedule ` +
          "(see deno task sluice schedules list)",
      );
      return 1;
    }
    io.out(`Deleted schedule ${JSON.stringify(name)}.`);
    return 0;
  },
};
