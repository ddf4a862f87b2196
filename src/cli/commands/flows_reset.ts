/**
 * `flows reset <flow_slug>`: development only; deletes a flow's definition and all its data
 * through `sluice.delete_flow_and_data`, so that the next worker compiles the changed shape.
 *
 * @module
 */

import { deleteFlowAndData } from "../../db/ops_queries.ts";
import type { OpsCommand } from "./command_types.ts";

/**
 * The `flows reset` command. Exits 0 when the flow was deleted, 1 when no flow has that slug or
 * when it refused (active runs, live workers) without `--force`.
 *
 * @example Usage
 * ```ts ignore
 * import { flowsResetCommand } from "./flows_reset.ts";
 *
 * await flowsResetCommand.run(sql, { positional: ["greet_user"], json: false, options: {} }, io);
 * ```
 */
export const flowsResetCommand: OpsCommand = {
  name: "flows reset",
  positional: ["flow_slug"],
  options: [
    {
      name: "force",
      summary: "delete even while runs are active or live workers serve the flow (development)",
    },
  ],
  json: false,
  summary: "development: delete a flow's definition and all its runs, tasks and queues",
  description: "Calls sluice.delete_flow_and_data. For a development database only: the flow's\n" +
    "runs, tasks, messages, private queues and aliases are gone for good. It refuses while\n" +
    "runs are active or live workers serve the flow (naming them) unless --force; the next\n" +
    "worker to start compiles the flow's current shape.",
  async run(sql, args, io) {
    const [slug] = args.positional;
    let deleted: boolean;
    try {
      deleted = await deleteFlowAndData(sql, slug, args.options.force === true);
    } catch (error) {
      if ((error as { code?: string }).code !== "55006") throw error;
      io.err(`${(error as Error).message.replace("or pass force", "or pass --force")}`);
      return 1;
    }
    if (!deleted) {
      io.err(`Cannot reset flow ${JSON.stringify(slug)}: no flow has that slug (see runs)`);
      return 1;
    }
    io.out(`Deleted flow ${JSON.stringify(slug)} with all its runs, tasks and queues.`);
    return 0;
  },
};
