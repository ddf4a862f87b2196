/**
 * Every SQL statement of the Edge adapter, one function each.
 *
 * @module
 */

import { onlyRow } from "./only_row.ts";
import type { Sql } from "./driver/postgres.ts";

/** What a worker function's `sluice.worker_functions` row says about starting a worker. */
export interface FunctionState {
  readonly enabled: boolean;
  /** ISO 8601 timestamp of the restart pause, or `null`. */
  readonly restartPausedAt: string | null;
  readonly pauseReason: string | null;
  /**
   * `last_invoked_at` as PostgreSQL text: kept exact (microseconds) because it is handed back to
   * `sluice.claim_respawn` for a compare-and-set, which a JavaScript `Date` would round.
   */
  readonly lastInvokedAt: string | null;
}

/** Reads the function's row; `null` when the function was never tracked (it may start). */
export async function readFunctionState(
  sql: Sql,
  functionName: string,
): Promise<FunctionState | null> {
  const rows = await sql<
    {
      enabled: boolean;
      restart_paused_at: Date | null;
      pause_reason: string | null;
      last_invoked_at: string | null;
    }[]
  >`
    select wf.enabled, wf.restart_paused_at, wf.pause_reason, wf.last_invoked_at::text
    from sluice.worker_functions wf
    where wf.function_name = ${functionName}`;
  if (rows.length === 0) return null;
  const [row] = rows;
  return {
    enabled: row.enabled,
    restartPausedAt: row.restart_paused_at?.toISOString() ?? null,
    pauseReason: row.pause_reason,
    lastInvokedAt: row.last_invoked_at,
  };
}

/**
 * Claims the right to request a successor (`sluice.claim_respawn`): `true` for exactly one of the
 * isolates that saw the same `last_invoked_at`, and only while the function is enabled and not
 * restart-paused.
 */
export async function claimRespawn(
  sql: Sql,
  functionName: string,
  seenInvokedAt: string | null,
): Promise<boolean> {
  // Sent as text and cast by the server: typed as timestamptz, postgres.js would send it through
  // a JavaScript Date and drop the microseconds the comparison needs.
  const row = onlyRow(
    "claim_respawn",
    await sql<{ claimed: boolean }[]>`
      select sluice.claim_respawn(${functionName}, ${seenInvokedAt}::text::timestamptz) as claimed`,
  );
  return row.claimed;
}
