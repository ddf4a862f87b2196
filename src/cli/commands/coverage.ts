/**
 * `deno task ops coverage`: every route of every compiled flow with its live workers, from
 * `sluice.route_coverage`. A route without a worker whose heartbeat is fresh is flagged `MISSING`:
 * its tasks are not lost, they wait in its queue until a worker for it starts.
 *
 * @module
 */

import { readRouteCoverage } from "../../db/ops_queries.ts";
import { type OpsCommand, printListing } from "./command_types.ts";

/**
 * The `coverage` command. Always exits 0 when the view could be read: a missing worker is a state
 * to report, not a failure of the command (`--json` lets scripts decide).
 *
 * @example Usage
 * ```ts ignore
 * import { coverageCommand } from "./coverage.ts";
 *
 * await coverageCommand.run(sql, { positional: [], json: false }, io);
 * ```
 */
export const coverageCommand: OpsCommand = {
  name: "coverage",
  positional: [],
  json: true,
  summary: "every route with its live workers; routes nobody serves are flagged MISSING",
  description:
    "Reads sluice.route_coverage: one line per (flow, step) route with its queue, the\n" +
    "workers serving it whose heartbeat is fresh, and its queued tasks. A route without a\n" +
    "live worker is MISSING: its tasks wait durably in its queue until a worker starts.",
  async run(sql, args, io) {
    const rows = await readRouteCoverage(sql);
    const printed = printListing(io, args, rows, {
      empty: "No compiled flows, so no routes.",
      headers: ["FLOW", "STEP", "QUEUE", "WORKERS", "QUEUED", "STATUS"],
      cells: (row) => [
        row.flow_slug,
        row.step_slug,
        row.queue_name,
        String(row.live_workers),
        String(row.queued_tasks),
        row.missing_worker ? "MISSING" : "ok",
      ],
      align: ["left", "left", "left", "right", "right", "left"],
    });
    if (!printed) return 0;
    const missing = rows.filter((row) => row.missing_worker);
    io.out("");
    io.out(
      missing.length === 0
        ? `All ${rows.length} routes have a live worker.`
        : `${missing.length} of ${rows.length} routes have no live worker; their tasks wait in ` +
          "their queues until a worker for them starts.",
    );
    return 0;
  },
};
