/**
 * `deno task ops prune <interval>`: deletes runs finished longer ago than the interval (with
 * their archived messages), workers stopped that long ago, and signals expired or consumed that
 * long ago, through
 * `sluice.prune_data_older_than`, which deletes in batches of 1,000 runs, each its own
 * transaction, so that claims and completions keep running while it works.
 *
 * @module
 */

import { pruneDataOlderThan } from "../../db/ops_queries.ts";
import type { OpsCommand } from "./command_types.ts";

/**
 * The `prune` command. The interval is any PostgreSQL interval (`30 days`, `12h`, `1 week`); an
 * invalid or negative one is rejected by the database and nothing is deleted.
 *
 * @example Usage
 * ```ts ignore
 * import { pruneCommand } from "./prune.ts";
 *
 * await pruneCommand.run(sql, { positional: ["30 days"], json: false }, io);
 * ```
 */
export const pruneCommand: OpsCommand = {
  name: "prune",
  positional: ["interval"],
  json: false,
  summary:
    "delete finished runs and stopped workers older than an interval, e.g. '30 days', and old signals",
  description:
    "Calls sluice.prune_data_older_than, which deletes in batches of 1,000 runs, each\n" +
    "committed before the next. Runs still in progress are never pruned. Signals go\n" +
    "when they expire (7 days after they were sent) or were consumed before the interval.\n" +
    "The interval is a PostgreSQL interval: '30 days', '12 hours', '1 week'.",
  async run(sql, args, io) {
    const [interval] = args.positional;
    const result = await pruneDataOlderThan(sql, interval);
    io.out(
      `Pruned ${result.runs} runs finished and ${result.workers} workers stopped more than ` +
        `${interval} ago, and ${result.signals} signals expired or consumed.`,
    );
    return 0;
  },
};
