/**
 * `deno task ops runs [--flow F] [--status S] [--since WHEN] [--limit N]`: the latest runs with
 * their status, progress and error.
 *
 * @module
 */

import { listRuns } from "../../db/ops_queries.ts";
import { unknownFlowHint } from "./flow_names.ts";
import { firstLine, type OpsCommand, optionString, printListing } from "./command_types.ts";
import { formatDuration, formatIsoTime } from "../../dashboard/format.ts";

const STATUSES = ["started", "completed", "failed", "cancelled"];

/**
 * The `runs` command. Exits 2 for a bad `--status`, `--since` or `--limit` (nothing is read), 1
 * for a `--flow` that names no compiled flow (with the closest slug, when one is a typo away).
 *
 * @example Usage
 * ```ts ignore
 * import { runsCommand } from "./runs.ts";
 *
 * await runsCommand.run(sql, { positional: [], json: false, options: { status: "failed" } }, io);
 * ```
 */
export const runsCommand: OpsCommand = {
  name: "runs",
  positional: [],
  options: [
    { name: "flow", value: "SLUG", summary: "only runs of this flow" },
    {
      name: "status",
      value: "STATUS",
      summary: "only runs started, completed, failed or cancelled",
    },
    {
      name: "since",
      value: "WHEN",
      summary: "only runs started since: an interval ('1 hour') or a timestamp (2026-11-30T12:00Z)",
    },
    { name: "limit", value: "N", summary: "at most N runs, newest first (default 50)" },
  ],
  json: true,
  summary: "the latest runs: status, steps done, retries, duration, error",
  description:
    "Lists runs newest first from sluice.runs: RETRIES counts `run retry`s, ERROR is a failed\n" +
    "run's error or a cancelled run's reason. `deno task sluice run <run_id>` shows one\n" +
    "run's steps, tasks, attempts and errors.",
  async run(sql, args, io) {
    const flow = optionString(args, "flow") ?? null;
    const status = optionString(args, "status") ?? null;
    const since = optionString(args, "since") ?? null;
    const limit = optionString(args, "limit", "50");
    if (status !== null && !STATUSES.includes(status)) {
      io.err(
        `Cannot list runs: --status must be one of ${STATUSES.join(", ")}, got ${
          JSON.stringify(status)
        }`,
      );
      return 2;
    }
    if (!/^[1-9]\d{0,5}$/.test(limit)) {
      io.err(
        `Cannot list runs: --limit must be a whole number from 1, got ${JSON.stringify(limit)}`,
      );
      return 2;
    }
    // A mistyped slug would otherwise answer "No runs match." and exit 0, as if all were well.
    const unknown = flow === null ? null : await unknownFlowHint(sql, flow);
    if (unknown !== null) {
      io.err(`Cannot list runs: ${unknown}`);
      return 1;
    }
    const rows = await listRuns(sql, { flow, status, since, limit: Number(limit), offset: 0 });
    printListing(io, args, rows, {
      empty: "No runs match.",
      headers: ["RUN", "FLOW", "STATUS", "STEPS", "RETRIES", "STARTED", "DURATION", "ERROR"],
      cells: (row) => [
        row.run_id,
        row.flow_slug,
        row.status,
        `${row.steps - row.remaining_steps}/${row.steps}`,
        String(row.retry_count),
        formatIsoTime(row.started_at),
        formatDuration(row.started_at, row.finished_at),
        row.error_message !== null
          ? firstLine(row.error_message)
          : row.status === "cancelled"
          ? `cancelled${row.cancel_reason === null ? "" : `: ${firstLine(row.cancel_reason)}`}`
          : "-",
      ],
      align: ["left", "left", "left", "right", "right", "left", "right", "left"],
    });
    return 0;
  },
};
