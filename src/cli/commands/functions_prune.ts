/**
 * `deno task ops functions prune <interval>`: deletes worker-function rows that have had no
 * worker for the interval, through `sluice.prune_worker_functions`.
 *
 * @module
 */

import { pruneWorkerFunctions } from "../../db/ops_queries.ts";
import type { OpsCommand } from "./command_types.ts";

/**
 * The `functions prune` command.
 *
 * @example Usage
 * ```ts ignore
 * import { functionsPruneCommand } from "./functions_prune.ts";
 *
 * await functionsPruneCommand.run(sql, { positional: ["30 days"], json: false, options: {} }, io);
 * ```
 */
export const functionsPruneCommand: OpsCommand = {
  name: "functions prune",
  positional: ["interval"],
  json: false,
  summary: "delete worker functions that have had no worker for an interval, e.g. '30 days'",
  description:
    "Calls sluice.prune_worker_functions: deletes the rows (and stopped workers) of worker\n" +
    "functions with no worker heartbeat, stop, invocation or change within the interval,\n" +
    "e.g. functions a rollout removed. Disabled and restart-paused functions are kept:\n" +
    "deleting their row would enable them again.",
  async run(sql, args, io) {
    const [interval] = args.positional;
    const pruned = await pruneWorkerFunctions(sql, interval);
    io.out(
      pruned.length === 0
        ? `No worker function has been without a worker for ${interval}.`
        : `Pruned ${pruned.length} worker functions without a worker for ${interval}: ${
          pruned.join(", ")
        }.`,
    );
    return 0;
  },
};
