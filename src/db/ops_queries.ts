/**
 * Every SQL statement of the operator CLI (`src/ops/commands/`), one function each: the monitoring
 * views it lists and the maintenance functions it calls (docs/ops.md).
 *
 * @module
 */

import type { Sql } from "./postgres.ts";

/** One row of `sluice.route_coverage`. */
export interface CoverageRow extends Record<string, unknown> {
  flow_slug: string;
  step_slug: string;
  step_index: number;
  queue_name: string;
  live_workers: number;
  queued_tasks: number;
  last_heartbeat_at: Date | null;
  missing_worker: boolean;
}

/** `sluice.route_coverage`, by flow and step order. */
export async function readRouteCoverage(sql: Sql): Promise<CoverageRow[]> {
  return await sql<CoverageRow[]>`
      select flow_slug, step_slug, step_index, queue_name, live_workers, queued_tasks,
        last_heartbeat_at, missing_worker
      from sluice.route_coverage
      order by flow_slug collate "C", step_index
    `;
}

/** One row of `sluice.worker_function_status`. */
export interface FunctionRow extends Record<string, unknown> {
  function_name: string;
  enabled: boolean;
  restart_paused: boolean;
  restart_paused_at: Date | null;
  pause_reason: string | null;
  last_invoked_at: Date | null;
  live_workers: number;
}

/** `sluice.worker_function_status`, by function name. */
export async function readWorkerFunctionStatus(sql: Sql): Promise<FunctionRow[]> {
  return await sql<FunctionRow[]>`
      select function_name, enabled, restart_paused, restart_paused_at, pause_reason,
        last_invoked_at, live_workers
      from sluice.worker_function_status
      order by function_name collate "C"
    `;
}

/** One row of `sluice.queue_health`, counts as numbers. */
export interface QueueRow extends Record<string, unknown> {
  queue_name: string;
  ownership: string;
  owner_flow_slug: string | null;
  queue_length: number;
  queue_visible_length: number;
  oldest_msg_age_sec: number | null;
  live_workers: number;
}

/** `sluice.queue_health`, by queue name. */
export async function readQueueHealth(sql: Sql): Promise<QueueRow[]> {
  // PGMQ counts are bigint, which postgres.js hands over as strings; no queue comes near 2^53.
  return await sql<QueueRow[]>`
      select queue_name, ownership, owner_flow_slug,
        queue_length::float8 as queue_length,
        queue_visible_length::float8 as queue_visible_length,
        oldest_msg_age_sec::float8 as oldest_msg_age_sec,
        live_workers
      from sluice.queue_health
      order by queue_name collate "C"
    `;
}

/** Whether a worker function of that name is tracked. */
export async function workerFunctionExists(sql: Sql, functionName: string): Promise<boolean> {
  const rows = await sql`
    select 1 from sluice.worker_functions where function_name = ${functionName}
  `;
  return rows.length > 0;
}

/** `sluice.clear_restart_pause`: whether the function was paused (and is no longer). */
export async function clearRestartPause(sql: Sql, functionName: string): Promise<boolean> {
  const [{ cleared }] = await sql<{ cleared: boolean }[]>`
    select sluice.clear_restart_pause(${functionName}) as cleared
  `;
  return cleared;
}

/** `sluice.prune_data_older_than`: how many finished runs and stopped workers were deleted. */
export async function pruneDataOlderThan(
  sql: Sql,
  interval: string,
): Promise<{ runs: number; workers: number }> {
  const [{ result }] = await sql<{ result: { runs: number; workers: number } }[]>`
    call sluice.prune_data_older_than(${interval}::interval)
  `;
  return result;
}

/**
 * `sluice.delete_flow_and_data`: removes a flow with its runs, tasks, messages, private queues and
 * aliases. Returns false (nothing changed) when no flow has that slug.
 */
export async function deleteFlowAndData(sql: Sql, flowSlug: string): Promise<boolean> {
  const [{ exists }] = await sql<{ exists: boolean }[]>`
    select exists (select 1 from sluice.flows where flow_slug = ${flowSlug}) as exists
  `;
  if (!exists) return false;
  await sql`select sluice.delete_flow_and_data(${flowSlug})`;
  return true;
}
