/**
 * `deno task ops runs cancel --flow SLUG --reason TEXT [--started-via NAME] [--started-before WHEN]
 * [--batch-size N]`: cancels a flow's started runs, batch by batch (`sluice.cancel_runs`).
 *
 * @module
 */

import { cancelRuns } from "../../client/cancel_run.ts";
import { type OpsCommand, optionString, printJson } from "./command_types.ts";

/**
 * The `runs cancel` command. Exits 0 once no matching started run is left, 2 for a missing
 * `--flow` or `--reason` or a bad `--batch-size` or `--started-before` (nothing is cancelled).
 *
 * @example Usage
 * ```ts ignore
 * import { runsCancelCommand } from "./runs_cancel.ts";
 *
 * await runsCancelCommand.run(sql, {
 *   positional: [],
 *   json: false,
 *   options: { flow: "orders_v1", reason: "superseded" },
 * }, io);
 * ```
 */
export const runsCancelCommand: OpsCommand = {
  name: "runs cancel",
  positional: [],
  options: [
    { name: "flow", value: "SLUG", summary: "the concrete flow whose started runs to cancel" },
    { name: "reason", value: "TEXT", summary: "why (stored on each run; required)" },
    { name: "started-via", value: "NAME", summary: "only runs started through this alias" },
    {
      name: "started-before",
      value: "WHEN",
      summary: "only runs started before this timestamp (2026-11-30T12:00Z)",
    },
    { name: "batch-size", value: "N", summary: "runs per transaction (default 500)" },
  ],
  json: true,
  summary: "cancel many started runs of a flow, batch by batch",
  description:
    "Calls sluice.cancel_runs until no matching started run is left: each call cancels at\n" +
    "most --batch-size runs (oldest first) in one statement and commits, as `run cancel`\n" +
    "cancels one. Prints how many runs it cancelled.",
  async run(sql, args, io) {
    const flow = optionString(args, "flow");
    const reason = optionString(args, "reason");
    const batch = optionString(args, "batch-size", "500");
    const before = optionString(args, "started-before");
    const action = `Cannot cancel runs of flow ${JSON.stringify(flow ?? null)}`;
    if (flow === undefined) {
      io.err("Cannot cancel runs: give --flow (the concrete flow whose runs to cancel)");
      return 2;
    }
    if (reason === undefined || reason.trim() === "") {
      io.err(`${action}: give --reason (why they are cancelled)`);
      return 2;
    }
    if (!/^[1-9]\d{0,4}$/.test(batch) || Number(batch) > 10_000) {
      io.err(`${action}: --batch-size must be a whole number from 1 to 10000, got ${batch}`);
      return 2;
    }
    const startedBefore = before === undefined ? null : new Date(before);
    if (startedBefore !== null && Number.isNaN(startedBefore.getTime())) {
      io.err(`${action}: --started-before must be a timestamp, got ${JSON.stringify(before)}`);
      return 2;
    }
    const runIds: string[] = [];
    for (;;) {
      const result = await cancelRuns(sql, flow, {
        reason,
        startedVia: optionString(args, "started-via") ?? null,
        startedBefore,
        batchSize: Number(batch),
      });
      runIds.push(...result.runIds);
      if (!result.more) break;
    }
    if (args.json) printJson(io, runIds.map((runId) => ({ run_id: runId })));
    else {
      io.out(
        `Cancelled ${runIds.length} ${runIds.length === 1 ? "run" : "runs"} of flow ${flow}.`,
      );
    }
    return 0;
  },
};
