/**
 * `deno task ops run retry <run_id> [--force]`: retries a failed or cancelled run from where it
 * stopped (`sluice.retry_run`).
 *
 * @module
 */

import { RunNotFoundError, RunWorkersMissingError } from "../../client/errors.ts";
import { retryRun } from "../../client/retry_run.ts";
import { type OpsCommand, printJson } from "./command_types.ts";

/**
 * The `run retry` command. Exits 0 when the run was retried or needed no retry (it says which),
 * 1 when no run has the id or, without `--force`, a step to start again has no live worker.
 *
 * @example Usage
 * ```ts ignore
 * import { runRetryCommand } from "./run_retry.ts";
 *
 * await runRetryCommand.run(sql, { positional: [runId], json: false, options: {} }, io);
 * ```
 */
export const runRetryCommand: OpsCommand = {
  name: "run retry",
  positional: ["run_id"],
  options: [{ name: "force", summary: "retry even when no live worker serves a step to redo" }],
  json: true,
  summary: "retry a failed or cancelled run: only what did not complete runs again",
  description:
    "Calls sluice.retry_run: the run goes back to started on the concrete flow it started on;\n" +
    "its failed and cancelled tasks get fresh attempts (attempt numbers keep counting, and each\n" +
    "task gets its max attempts again), steps that completed keep their outputs and do not run\n" +
    "again. The run records the retry count and who retried it. Refused, changing nothing, when\n" +
    "a step to start again has no live worker of that flow, unless --force.",
  async run(sql, args, io) {
    const [runId] = args.positional;
    try {
      const result = await retryRun(sql, runId, { force: args.options.force === true });
      if (args.json) printJson(io, [result]);
      else if (result.outcome === "retried") {
        io.out(
          `Retried run ${runId} (retry ${result.retryCount}): ${result.tasks} ` +
            `${result.tasks === 1 ? "task" : "tasks"} queued again, ${result.steps} ` +
            `${result.steps === 1 ? "step" : "steps"} resumed; status ${result.status}.`,
        );
      } else {
        io.out(`Run ${runId} is ${result.status}, not failed or cancelled; nothing changed.`);
      }
      return 0;
    } catch (error) {
      if (error instanceof RunWorkersMissingError) {
        io.err(`${error.message}; start its workers, or pass --force to queue the work for them`);
        return 1;
      }
      if (!(error instanceof RunNotFoundError)) throw error;
      io.err(error.message);
      return 1;
    }
  },
};
