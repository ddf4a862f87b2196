/**
 * `deno task sluice signals list [--key K] [--run RUN_ID] [--state S] [--limit N]`: the kept
 * signals, newest first, with their state, age and the steps waiting on their key.
 *
 * @module
 */

import { listSignals, SIGNAL_STATES, type SignalState } from "../../db/ops_queries.ts";
import { isUuid } from "../../dsl/uuid.ts";
import { type OpsCommand, optionString, printListing } from "./command_types.ts";
import { formatIsoTime, formatSeconds, jsonPreview } from "../../dashboard/format.ts";

/** How much of a payload a row shows. */
const PAYLOAD_PREVIEW = 40;

/**
 * The `signals list` command. Exits 2 for a bad `--state`, `--run` or `--limit` (nothing is read).
 *
 * @example Usage
 * ```ts ignore
 * import { signalsListCommand } from "./signals_list.ts";
 *
 * await signalsListCommand.run(sql, { positional: [], json: false, options: { state: "pending" } }, io);
 * ```
 */
export const signalsListCommand: OpsCommand = {
  name: "signals list",
  positional: [],
  options: [
    { name: "key", value: "KEY", summary: "only signals with this key" },
    { name: "run", value: "RUN_ID", summary: "only signals of keys this run waits or waited on" },
    { name: "state", value: "STATE", summary: "only signals pending, released or expired" },
    { name: "limit", value: "N", summary: "at most N signals, newest first (default 50)" },
  ],
  json: true,
  summary: "the kept signals: key, pending or released, age, steps waiting on the key",
  description:
    "Lists sluice.signals newest first. STATE is `released` (a wait consumed it), `pending` (kept\n" +
    "for a wait that starts later, until EXPIRES: 7 days after it was sent) or `expired`. A\n" +
    "pending signal with WAITING 0 is one nobody waits on: a mistyped key, or a cancelled run's.\n" +
    "`prune <interval>` deletes expired signals and those released longer ago than the interval.",
  async run(sql, args, io) {
    const key = optionString(args, "key") ?? null;
    const runId = optionString(args, "run") ?? null;
    const state = optionString(args, "state") ?? null;
    const limit = optionString(args, "limit", "50");
    const fail = (message: string) => {
      io.err(`Cannot list signals: ${message}`);
      return 2;
    };
    if (state !== null && !(SIGNAL_STATES as readonly string[]).includes(state)) {
      return fail(
        `--state must be one of ${SIGNAL_STATES.join(", ")}, got ${JSON.stringify(state)}`,
      );
    }
    if (runId !== null && !isUuid(runId)) {
      return fail(`--run must be a run id (a UUID), got ${JSON.stringify(runId)}`);
    }
    if (!/^[1-9]\d{0,5}$/.test(limit)) {
      return fail(`--limit must be a whole number from 1, got ${JSON.stringify(limit)}`);
    }
    const rows = await listSignals(sql, {
      key,
      runId,
      state: state as SignalState | null,
      limit: Number(limit),
    });
    printListing(io, args, rows, {
      empty: "No signals match.",
      headers: ["SIGNAL", "KEY", "STATE", "AGE", "WAITING", "SENT", "EXPIRES", "PAYLOAD"],
      cells: (row) => [
        row.signal_id,
        row.signal_key,
        row.state,
        formatSeconds(row.age_seconds),
        String(row.waiting_steps),
        formatIsoTime(row.sent_at),
        row.state === "pending" ? formatIsoTime(row.expires_at) : "-",
        jsonPreview(row.payload, PAYLOAD_PREVIEW, PAYLOAD_PREVIEW).preview,
      ],
      align: ["left", "left", "left", "right", "right", "left", "left", "left"],
    });
    return 0;
  },
};
