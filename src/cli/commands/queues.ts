/**
 * `deno task ops queues`: every queue sluice registered, with its PGMQ depth and live workers,
 * from `sluice.queue_health`.
 *
 * @module
 */

import { readQueueHealth } from "../../db/ops_queries.ts";
import { type OpsCommand, printListing } from "./command_types.ts";

/**
 * The `queues` command.
 *
 * @example Usage
 * ```ts ignore
 * import { queuesCommand } from "./queues.ts";
 *
 * await queuesCommand.run(sql, { positional: [], json: true }, io);
 * ```
 */
export const queuesCommand: OpsCommand = {
  name: "queues",
  positional: [],
  json: true,
  summary: "every registered queue with its depth, oldest message age and live workers",
  description: "Reads sluice.queue_health: per queue its ownership (private to one flow, or\n" +
    "shared), messages in it (DEPTH) and visible now (VISIBLE), the age of the oldest\n" +
    "message in seconds, and the live workers polling it.",
  async run(sql, args, io) {
    const rows = await readQueueHealth(sql);
    printListing(io, args, rows, {
      empty: "No queues registered.",
      headers: ["QUEUE", "OWNERSHIP", "OWNER", "DEPTH", "VISIBLE", "OLDEST", "WORKERS"],
      cells: (row) => [
        row.queue_name,
        row.ownership,
        row.owner_flow_slug ?? "-",
        String(row.queue_length),
        String(row.queue_visible_length),
        row.oldest_msg_age_sec === null ? "-" : `${row.oldest_msg_age_sec}s`,
        String(row.live_workers),
      ],
      align: ["left", "left", "left", "right", "right", "right", "right"],
    });
    return 0;
  },
};
