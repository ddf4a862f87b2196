/**
 * `deno task ops queues archive <queue> <message_id>...`: archives messages no worker may handle,
 * the way out of a restart pause caused by a stray message.
 *
 * @module
 */

import { archiveMessages } from "../../db/ops_queries.ts";
import type { OpsCommand } from "./command_types.ts";

/**
 * The `queues archive` command. Exits 1, archiving nothing, when an id is not a whole number,
 * the queue does not exist, or a message still carries a queued or started task.
 *
 * @example Usage
 * ```ts ignore
 * import { queuesArchiveCommand } from "./queues_archive.ts";
 *
 * await queuesArchiveCommand.run(sql, { positional: ["greet_user", "17"], json: false, options: {} }, io);
 * ```
 */
export const queuesArchiveCommand: OpsCommand = {
  name: "queues archive",
  positional: ["queue", "message_id"],
  variadic: true,
  json: false,
  summary: "archive stray messages of a queue (never one a queued or started task waits on)",
  description:
    "Calls sluice.archive_messages. Use it for the message ids a restart pause names (see\n" +
    "deno task sluice functions), then lift the pause with clear-pause. A message that carries a\n" +
    "task still queued or started is refused: its task would never run.",
  async run(sql, args, io) {
    const [queue, ...ids] = args.positional;
    const bad = ids.find((id) => !/^\d+$/.test(id));
    if (bad !== undefined) {
      io.err(
        `Cannot archive messages of queue ${JSON.stringify(queue)}: message id ${
          JSON.stringify(bad)
        } is not a whole number`,
      );
      return 1;
    }
    const result = await archiveMessages(sql, queue, ids);
    if (result.archived.length > 0) {
      io.out(`Archived messages ${result.archived.join(", ")} of queue ${queue}.`);
    }
    if (result.missing.length > 0) {
      io.out(`Not in queue ${queue} (already archived or deleted): ${result.missing.join(", ")}.`);
    }
    return 0;
  },
};
