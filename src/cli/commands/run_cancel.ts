/**
 * `deno task ops run cancel <run_id> --reason TEXT`: cancels one run (`sluice.cancel_run`).
 *
 * @module
 */

import { cancelRun } from "../../client/cancel_run.ts";
import { RunNotFoundError } from "../../client/errors.ts";
import { type OpsCommand, optionString, printJson } from "./command_types.ts";

/**
 * The `run cancel` command. Exits 0 when the run is cancelled now or had already ended (it says
 * which: cancelling again changes nothing), 1 when no run has the id, 2 without `--reason`.
 *
 * @example Usage
 * ```ts ignore
 * import { runCancelCommand } from "./run_cancel.ts";
 *
 * await runCancelCommand.run(sql, {
 *   positional: [runId],
 *   json: false,
 *   options: { reason: "duplicate order" },
 * }, io);
 * ```
 */
export const runCancelCommand: OpsCommand = {
  name: "run cancel",
  positional: ["run_id"],
  options: [{ name: "reason", value: "TEXT", summary: "why (stored on the run; required)" }],
  json: true,
  summary: "cancel a run: its tasks stop, running handlers are aborted",
  description:
    "Calls sluice.cancel_run: the run ends cancelled with the reason; its queued tasks are\n" +
    "cancelled and their messages archived; its running tasks' reports become stale and their\n" +
    "handlers' signals abort at their worker's next heartbeat; no further step starts. A run\n" +
    "that already ended is left as it was. `run retry` resumes a cancelled run.",
  async run(sql, args, io) {
    const [runId] = args.positional;
    const reason = optionString(args, "reason");
    if (reason === undefined || reason.trim() === "") {
      io.err(`Cannot cancel run ${JSON.stringify(runId)}: give --reason (why it is cancelled)`);
      return 2;
    }
    try {
      const result = await cancelRun(sql, runId, { reason });
      if (args.json) printJson(io, [result]);
      else if (result.outcome === "cancelled") {
        io.out(
          `Cancelled run ${runId} (${result.tasks} ${result.tasks === 1 ? "task" : "tasks"} ` +
            `stopped): ${reason}`,
        );
      } else {
        io.out(
          `Run ${runId} had already ${
            result.status === "cancelled" ? "been cancelled" : result.status
          }; nothing changed.`,
        );
      }
      return 0;
    } catch (error) {
      if (!(error instanceof RunNotFoundError)) throw error;
      io.err(error.message);
      return 1;
    }
  },
};
