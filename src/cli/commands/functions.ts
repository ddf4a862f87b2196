/**
 * `deno task ops functions`: every worker function with its enabled flag, restart pause and live
 * workers, from `sluice.worker_function_status`.
 *
 * @module
 */

import { readWorkerFunctionStatus } from "../../db/ops_queries.ts";
import { type OpsCommand, printListing } from "./command_types.ts";
import { formatIsoTime } from "../../dashboard/format.ts";

/**
 * The `functions` command.
 *
 * @example Usage
 * ```ts ignore
 * import { functionsCommand } from "./functions.ts";
 *
 * await functionsCommand.run(sql, { positional: [], json: false }, io);
 * ```
 */
export const functionsCommand: OpsCommand = {
  name: "functions",
  positional: [],
  json: true,
  summary: "every worker function: enabled, restart pause and reason, live workers",
  description: "Reads sluice.worker_function_status. A restart-paused function does not respawn\n" +
    "its worker until an operator runs `deno task sluice clear-pause <function_name>`.",
  async run(sql, args, io) {
    const rows = await readWorkerFunctionStatus(sql);
    printListing(io, args, rows, {
      empty: "No worker functions tracked yet.",
      headers: ["FUNCTION", "ENABLED", "PAUSED SINCE", "WORKERS", "LAST INVOKED", "PAUSE REASON"],
      cells: (row) => [
        row.function_name,
        row.enabled ? "yes" : "no",
        formatIsoTime(row.restart_paused_at),
        String(row.live_workers),
        formatIsoTime(row.last_invoked_at),
        row.pause_reason ?? "-",
      ],
      align: ["left", "left", "left", "right", "left", "left"],
    });
    return 0;
  },
};
