/**
 * `deno task ops runs [--flow F] [--status S] [--since WHEN] [--limit N]`: the latest runs with
 * their status, progress and error.
 *
 * @module
 */

import {
  firstLine,
  formatDuration,
  formatTime,
  type OpsCommand,
  optionString,
  printListing,
} from "./_command.ts";

/** One listed run. */
interface RunRow extends Record<string, unknown> {
  run_id: string;
  flow_slug: string;
  status: string;
  steps: number;
  remaining_steps: number;
  started_at: Date;
  finished_at: Date | null;
  error_message: string | null;
}

const STATUSES = ["started", "completed", "failed"];

/**
 * The `runs` command. Exits 2 for a bad `--status`, `--since` or `--limit` (nothing is read).
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
    { name: "status", value: "STATUS", summary: "only runs started, completed or failed" },
    {
      name: "since",
      value: "WHEN",
      summary: "only runs started since: an interval ('1 hour') or a timestamp (2026-11-30T12:00Z)",
    },
    { name: "limit", value: "N", summary: "at most N runs, newest first (default 50)" },
  ],
  json: true,
  summary: "the latest runs: status, steps done, duration, error",
  description:
    "Lists runs newest first from sluice.runs. `deno task ops run <run_id>` shows one\n" +
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
    // A date-like value is a timestamp, anything else an interval back from now.
    const sinceTime = since !== null && /^\d{4}-\d{2}-\d{2}/.test(since) ? since : null;
    const sinceInterval = since !== null && sinceTime === null ? since : null;
    const rows = await sql<RunRow[]>`
      select r.run_id, r.flow_slug, r.status, r.remaining_steps, r.started_at,
        coalesce(r.completed_at, r.failed_at) as finished_at, r.error_message,
        (select count(*)::integer from sluice.steps s where s.flow_slug = r.flow_slug) as steps
      from sluice.runs r
      where (${flow}::text is null or r.flow_slug = ${flow}::text)
        and (${status}::text is null or r.status = ${status}::text)
        and (${sinceTime}::timestamptz is null or r.started_at >= ${sinceTime}::timestamptz)
        and (${sinceInterval}::interval is null or r.started_at >= now() - ${sinceInterval}::interval)
      order by r.started_at desc, r.run_id
      limit ${Number(limit)}
    `;
    printListing(io, args, rows, {
      empty: "No runs match.",
      headers: ["RUN", "FLOW", "STATUS", "STEPS", "STARTED", "DURATION", "ERROR"],
      cells: (row) => [
        row.run_id,
        row.flow_slug,
        row.status,
        `${row.steps - row.remaining_steps}/${row.steps}`,
        formatTime(row.started_at),
        formatDuration(row.started_at, row.finished_at),
        row.error_message === null ? "-" : firstLine(row.error_message),
      ],
      align: ["left", "left", "left", "right", "left", "right", "left"],
    });
    return 0;
  },
};
