/**
 * `deno task sluice concurrency`: per key of every concurrency-limited step with work, its slots
 * in use, running and held tasks and the oldest wait, from `sluice.concurrency_slots`.
 *
 * @module
 */

import { readConcurrencySlots } from "../../db/ops_queries.ts";
import { type OpsCommand, printListing } from "./command_types.ts";

/**
 * The `concurrency` command.
 *
 * @example Usage
 * ```ts ignore
 * import { concurrencyCommand } from "./concurrency.ts";
 *
 * await concurrencyCommand.run(sql, { positional: [], json: true }, io);
 * ```
 */
export const concurrencyCommand: OpsCommand = {
  name: "concurrency",
  positional: [],
  json: true,
  summary: "per key of each limited step: slots in use, held tasks, oldest wait",
  description: "Reads sluice.concurrency_slots: per key of every step with a concurrency limit\n" +
    "that has work, the limit, the slots in use (tasks sent and not ended), how many of\n" +
    "them run, the tasks held for a free slot and the oldest one's wait in seconds; a\n" +
    "rate-limited step's RATE is its limit per window.\n" +
    'The shared key (runs that gave none) shows as "-".',
  async run(sql, args, io) {
    const rows = await readConcurrencySlots(sql);
    printListing(io, args, rows, {
      empty: "No concurrency-limited step has work.",
      headers: ["FLOW", "STEP", "KEY", "LIMIT", "RATE", "IN USE", "RUNNING", "HELD", "OLDEST WAIT"],
      cells: (row) => [
        row.flow_slug,
        row.step_slug,
        row.concurrency_key === "" ? "-" : row.concurrency_key,
        row.concurrency_limit === null ? "-" : String(row.concurrency_limit),
        row.rate_limit === null ? "-" : `${row.rate_limit}/${row.rate_period}s`,
        String(row.slots_in_use),
        String(row.running),
        String(row.held),
        row.oldest_held_age_sec === null ? "-" : `${row.oldest_held_age_sec}s`,
      ],
      align: ["left", "left", "left", "right", "right", "right", "right", "right", "right"],
    });
    return 0;
  },
};
