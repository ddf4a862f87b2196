/**
 * `deno task ops queues`: every queue sluice registered, with its PGMQ depth and live workers,
 * from `sluice.queue_health`.
 *
 * @module
 */

import { type OpsCommand, printListing } from "./_command.ts";

/** One row of `sluice.queue_health`, counts as numbers. */
interface QueueRow extends Record<string, unknown> {
  queue_name: string;
  ownership: string;
  owner_flow_slug: string | null;
  queue_length: number;
  queue_visible_length: number;
  oldest_msg_age_sec: number | null;
  live_workers: number;
}

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
    // PGMQ counts are bigint, which postgres.js hands over as strings; no queue comes near 2^53.
    const rows = await sql<QueueRow[]>`
      select queue_name, ownership, owner_flow_slug,
        queue_length::float8 as queue_length,
        queue_visible_length::float8 as queue_visible_length,
        oldest_msg_age_sec::float8 as oldest_msg_age_sec,
        live_workers
      from sluice.queue_health
      order by queue_name collate "C"
    `;
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
