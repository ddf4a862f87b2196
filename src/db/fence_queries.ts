/**
 * Every SQL statement of the rollout commands (`deno task sluice fence ...` and the function
 * switches of `src/cli/commands/`), one function each: the switches' record, the drain view, the
 * deprecation and the coverage of a manifest (docs/rollout.md).
 *
 * @module
 */

import type { Sql } from "./driver/postgres.ts";

/** A worker function's `enabled` switch. */
export interface EnabledRow extends Record<string, unknown> {
  function_name: string;
  enabled: boolean;
}

/** The `enabled` switches of the named worker functions (a name without a row is absent). */
export async function readEnabledSwitches(
  sql: Sql,
  names: readonly string[],
): Promise<EnabledRow[]> {
  return await sql<EnabledRow[]>`
    select function_name, enabled from sluice.worker_functions
    where function_name = any (${names as string[]}::text[])
  `;
}

/** One row of `sluice.worker_function_drain`. */
export interface DrainRow extends Record<string, unknown> {
  function_name: string;
  enabled: boolean;
  live_workers: number;
  serving_workers: number;
  last_heartbeat_at: Date | null;
  started_tasks: number;
  queued_tasks: number;
  drained: boolean;
}

/** The drain state of the named functions (a name without a row is absent). */
export async function readDrain(sql: Sql, names: readonly string[]): Promise<DrainRow[]> {
  return await sql<DrainRow[]>`
    select function_name, enabled, live_workers, serving_workers, last_heartbeat_at,
      started_tasks, queued_tasks, drained
    from sluice.worker_function_drain
    where function_name = any (${names as string[]}::text[])
    order by function_name collate "C"
  `;
}

/** `sluice.deprecate_function_workers`: how many live workers of the functions it deprecated. */
export async function deprecateFunctionWorkers(
  sql: Sql,
  names: readonly string[],
): Promise<number> {
  const [{ count }] = await sql<{ count: number }[]>`
    select sluice.deprecate_function_workers(${names as string[]}::text[]) as count
  `;
  return count;
}

/** A live worker of a drained set. */
export interface LiveWorkerRow extends Record<string, unknown> {
  worker_id: string;
  function_name: string;
  queue_name: string;
  last_heartbeat_at: Date;
}

/** The live workers of the named functions, by function and worker id. */
export async function readLiveWorkersOf(
  sql: Sql,
  names: readonly string[],
): Promise<LiveWorkerRow[]> {
  return await sql<LiveWorkerRow[]>`
    select worker_id, function_name, queue_name, last_heartbeat_at from sluice.live_workers
    where function_name = any (${names as string[]}::text[])
    order by function_name collate "C", worker_id
  `;
}

/** A `started` task claimed by a worker of a drained set. */
export interface StartedTaskRow extends Record<string, unknown> {
  run_id: string;
  step_slug: string;
  task_index: number;
  attempts_count: number;
  function_name: string;
  worker_id: string;
  started_at: Date;
}

/** The `started` tasks whose last claim was by a worker of the named functions, oldest first. */
export async function readStartedTasksOf(
  sql: Sql,
  names: readonly string[],
): Promise<StartedTaskRow[]> {
  return await sql<StartedTaskRow[]>`
    select t.run_id, t.step_slug, t.task_index, t.attempts_count, w.function_name, w.worker_id,
      t.started_at
    from sluice.step_tasks t
    join sluice.workers w on w.worker_id = t.last_worker_id
    where t.status = 'started' and t.started_at is not null
      and w.function_name = any (${names as string[]}::text[])
    order by t.started_at, t.run_id, t.step_slug, t.task_index
  `;
}

/** One route of a manifest function, as the manifest gives it. */
export interface ManifestRoute {
  readonly function_name: string;
  readonly flow_slug: string;
  readonly step_slug: string | null;
  readonly queue_name: string;
}

/** One route of a manifest function with its serving workers. */
export interface RouteCoverageRow extends Record<string, unknown> {
  function_name: string;
  flow_slug: string;
  step_slug: string | null;
  queue_name: string;
  live_workers: number;
  compiled: boolean;
}

/**
 * Each route the manifest's functions serve (every step of a plain flow, one step of a step
 * function) with its live workers that are not deprecated; `compiled` is false for a flow that
 * was never compiled.
 */
export async function readManifestCoverage(
  sql: Sql,
  manifest: readonly ManifestRoute[],
): Promise<RouteCoverageRow[]> {
  return await sql<RouteCoverageRow[]>`
    select m.function_name, m.flow_slug, coalesce(s.step_slug, m.step_slug) as step_slug,
      m.queue_name, s.flow_slug is not null as compiled,
      (
        select count(*)::integer from sluice.live_workers w
        where w.deprecated_at is null and w.queue_name = s.queue_name
          and w.flow_slug = s.flow_slug and (w.step_slug is null or w.step_slug = s.step_slug)
      ) as live_workers
    from jsonb_to_recordset(${sql.json(manifest as never)}::jsonb)
      as m(function_name text, flow_slug text, step_slug text, queue_name text)
    left join sluice.steps s on s.flow_slug = m.flow_slug
      and (m.step_slug is null or s.step_slug = m.step_slug)
    order by m.function_name collate "C", s.step_index
  `;
}
