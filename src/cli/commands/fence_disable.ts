/**
 * `deno task ops fence disable`: disables every worker function of the recorded set, so none
 * respawns or starts a worker while the rollout runs.
 *
 * @module
 */

import { DEFAULT_STATE_FILE, readFenceState } from "./fence_state.ts";
import { type OpsCommand, optionString } from "./command_types.ts";
import { setWorkerFunctionsEnabled } from "../../db/ops_queries.ts";
import { printEnabledChanges } from "./_enabled.ts";
import { STATE_OPTION } from "./_fence.ts";

/**
 * The `fence disable` command. Warns (and still exits 0) when a value changed since the record:
 * `fence restore` puts back the recorded one.
 *
 * @example Usage
 * ```ts ignore
 * import { fenceDisableCommand } from "./fence_disable.ts";
 *
 * await fenceDisableCommand.run(sql, { positional: [], json: false, options: {} }, io);
 * ```
 */
export const fenceDisableCommand: OpsCommand = {
  name: "fence disable",
  positional: [],
  options: [STATE_OPTION],
  json: true,
  summary: "disable every recorded worker function (no respawn, no new worker)",
  description:
    "Sets enabled = false for the whole recorded set in one transaction (creating rows for\n" +
    "functions not deployed yet, so they cannot start early). A disabled Edge function starts\n" +
    "no worker and requests no successor; workers already running keep going until drained.",
  async run(sql, args, io) {
    const state = await readFenceState(optionString(args, "state", DEFAULT_STATE_FILE));
    const changes = await setWorkerFunctionsEnabled(
      sql,
      Object.fromEntries(state.functions.map((entry) => [entry.function_name, false])),
    );
    printEnabledChanges(io, args.json, changes);
    for (const change of changes) {
      const recorded = state.functions.find((entry) =>
        entry.function_name === change.function_name
      );
      if (recorded !== undefined && recorded.enabled !== change.previous_enabled) {
        io.err(
          `warning: ${JSON.stringify(change.function_name)} was ${
            change.previous_enabled ? "enabled" : "disabled"
          } now but ${
            recorded.enabled ? "enabled" : "disabled"
          } when recorded; fence restore puts back the recorded value`,
        );
      }
    }
    return 0;
  },
};
