/**
 * `deno task ops schedules list`: every schedule with its target, cron expression, time zone,
 * next due time and last tick.
 *
 * @module
 */

import { listSchedules } from "../../client/schedules.ts";
import { firstLine, type OpsCommand, printListing } from "./command_types.ts";
import { formatIsoTime } from "../../dashboard/format.ts";

/**
 * The `schedules list` command. Exits 0 when the schedules could be read.
 *
 * @example Usage
 * ```ts ignore
 * import { schedulesListCommand } from "./schedules_list.ts";
 *
 * await schedulesListCommand.run(sql, { positional: [], json: false, options: {} }, io);
 * ```
 */
export const schedulesListCommand: OpsCommand = {
  name: "schedules list",
  positional: [],
  json: true,
  summary: "every schedule: target, cron, next due time, last tick",
  description:
    "Lists sluice.schedules by name. TARGET is `flow:SLUG` (that concrete flow) or `alias:NAME`\n" +
    "(the flow the alias points at when a tick fires). NEXT DUE is `-` for a moment after each\n" +
    "tick, until a worker's heartbeat stores the next one (longer only while no worker runs).\n" +
    "STATE is `paused` or `active`; LAST ERROR says why the last tick started no run.",
  async run(sql, args, io) {
    printListing(io, args, await listSchedules(sql), {
      empty: "No schedules.",
      headers: [
        "SCHEDULE",
        "TARGET",
        "CRON",
        "TIMEZONE",
        "MISSED",
        "STATE",
        "NEXT DUE",
        "LAST FIRED",
        "LAST ERROR",
      ],
      cells: (row) => [
        row.name,
        `${row.targetKind}:${row.target}`,
        row.cron,
        row.timezone,
        row.missed,
        row.pausedAt === null ? "active" : "paused",
        formatIsoTime(row.nextDueAt),
        formatIsoTime(row.lastFiredAt),
        row.lastError === null ? "-" : firstLine(row.lastError),
      ],
      align: ["left", "left", "left", "left", "left", "left", "left", "left", "left"],
    });
    return 0;
  },
};
