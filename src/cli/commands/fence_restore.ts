/**
 * `deno task ops fence restore`: puts back exactly the recorded `enabled` values (a function that
 * was disabled stays disabled), then waits for a fresh worker of every re-enabled function.
 *
 * @module
 */

import { DEFAULT_STATE_FILE, readFenceState } from "./fence_state.ts";
import { type OpsCommand, optionString } from "./command_types.ts";
import { setWorkerFunctionsEnabled } from "../../db/ops_queries.ts";
import { printEnabledChanges } from "./_enabled.ts";
import { readDrain } from "../../db/fence_queries.ts";
import { STATE_OPTION } from "./_fence.ts";
import { timeoutMs, timeoutOption, waitWithProgress } from "./_wait.ts";

const DEFAULT_TIMEOUT = "5m";

/**
 * The `fence restore` command. Exits 0 once every re-enabled function of the new deploy has a
 * live worker that is not deprecated (and then deletes the state file), 1 on timeout.
 *
 * @example Usage
 * ```ts ignore
 * import { fenceRestoreCommand } from "./fence_restore.ts";
 *
 * await fenceRestoreCommand.run(sql, { positional: [], json: false, options: {} }, io);
 * ```
 */
export const fenceRestoreCommand: OpsCommand = {
  name: "fence restore",
  positional: [],
  options: [STATE_OPTION, timeoutOption(DEFAULT_TIMEOUT)],
  json: false,
  summary: "restore the recorded enabled values, then wait for a fresh worker per function",
  description:
    "Sets every recorded function back to its recorded value in one transaction. Then waits,\n" +
    "printing progress, until each function that is enabled again and in the new deploy has a\n" +
    "live worker that is not deprecated (start them as you always do: the first invocation of\n" +
    "an Edge function starts its worker). Deletes the state file when done; on timeout it\n" +
    "names the functions without a worker, keeps the file and exits 1 (run it again).",
  async run(sql, args, io) {
    const statePath = optionString(args, "state", DEFAULT_STATE_FILE);
    const limitMs = timeoutMs(args, DEFAULT_TIMEOUT);
    const state = await readFenceState(statePath);
    const changes = await setWorkerFunctionsEnabled(
      sql,
      Object.fromEntries(state.functions.map((entry) => [entry.function_name, entry.enabled])),
    );
    printEnabledChanges(io, false, changes);
    const awaited = state.functions
      .filter((entry) => entry.enabled && entry.deployed)
      .map((entry) => entry.function_name);
    let waiting = awaited;
    const ready = await waitWithProgress(io, limitMs, async () => {
      const rows = await readDrain(sql, awaited);
      waiting = awaited.filter((name) =>
        !rows.some((row) => row.function_name === name && row.serving_workers > 0)
      );
      return {
        done: waiting.length === 0,
        progress: `waiting for a fresh worker of ${waiting.join(", ")}`,
      };
    });
    if (!ready) {
      io.err(
        `Cannot confirm the restore within ${args.options.timeout ?? DEFAULT_TIMEOUT}: no live ` +
          `worker of ${waiting.join(", ")}; start them (invoke the functions), then run fence ` +
          `restore again (${statePath} is kept)`,
      );
      return 1;
    }
    await Deno.remove(statePath);
    io.out(
      `Restored ${changes.length} worker functions; ${awaited.length} enabled ones have a fresh ` +
        `worker. Removed ${statePath}.`,
    );
    return 0;
  },
};
