/**
 * `deno task ops clear-pause <function_name>`: lifts a worker function's persistent restart pause
 * through `sluice.clear_restart_pause`.
 *
 * @module
 */

import { clearRestartPause, workerFunctionExists } from "../../db/ops_queries.ts";
import type { OpsCommand } from "./command_types.ts";

/**
 * The `clear-pause` command. Exits 0 whether or not a pause was set (it says which), 1 when no
 * worker function has that name (most likely a typo).
 *
 * @example Usage
 * ```ts ignore
 * import { clearPauseCommand } from "./clear_pause.ts";
 *
 * await clearPauseCommand.run(sql, { positional: ["thread-digest--classify"], json: false }, io);
 * ```
 */
export const clearPauseCommand: OpsCommand = {
  name: "clear-pause",
  positional: ["function_name"],
  json: false,
  summary: "lift a worker function's restart pause (set when it met unsupported work)",
  description: "Calls sluice.clear_restart_pause. A worker that met a message it must not\n" +
    "handle pauses its function's self-respawn; fix the cause (deploy the right worker, or\n" +
    "remove the stray messages), then clear the pause. The next invocation starts a worker.",
  async run(sql, args, io) {
    const [name] = args.positional;
    if (!(await workerFunctionExists(sql, name))) {
      io.err(
        `Cannot clear the restart pause of ${
          JSON.stringify(name)
        }: no worker function has that name (see deno task sluice functions)`,
      );
      return 1;
    }
    const cleared = await clearRestartPause(sql, name);
    io.out(
      cleared
        ? `Cleared the restart pause of worker function ${JSON.stringify(name)}.`
        : `Worker function ${JSON.stringify(name)} was not restart-paused; nothing changed.`,
    );
    return 0;
  },
};
