/**
 * Every SQL statement of the operator CLI (`src/cli/commands/`), one function each: the monitoring
 * views it lists and the maintenance functions it calls (docs/ops.md).
 *
 * @module
 */

import type { Sql } from "./driver/postgres.ts";

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

/** One row of `sluice.concurrency_slots`. */
export interface ConcurrencySlotRow extends Record<string, unknown> {
  flow_slug: string;
  step_slug: string;
  concurrency_key: string;
  concurrency_limit: number | null;
  slots_in_use: number;
  running: number;
  held: number;
  oldest_held_at: Date | null;
  oldest_held_age_sec: number | null;
  rate_limit: number | null;
  rate_period: number | null;
}

/** `sluice.concurrency_slots`, by flow, step and key. */
export async function readConcurrencySlots(sql: Sql): Promise<ConcurrencySlotRow[]> {
  return await sql<ConcurrencySlotRow[]>`
      select flow_slug, step_slug, concurrency_key, concurrency_limit, slots_in_use, running,
        held, oldest_held_at, oldest_held_age_sec, rate_limit, rate_period
      from sluice.concurrency_slots
      order by flow_slug collate "C", step_slug collate "C", concurrency_key collate "C"
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

/**
 * `sluice.prune_data_older_than`: how many finished runs, stopped workers and expired or
 * consumed signals were deleted.
 */
export async function pruneDataOlderThan(
  sql: Sql,
  interval: string,
): Promise<{ runs: number; workers: number; signals: number }> {
  const [{ result }] = await sql<
    { result: { runs: number; workers: number; signals: number } }[]
  >`
    call sluice.prune_data_older_than(${interval}::interval)
  `;
  return result;
}

/**
 * `sluice.delete_flow_and_data`: removes a flow with its runs, tasks, messages, private queues and
 * aliases. Returns false (nothing changed) when no flow has that slug.
 */
export async function deleteFlowAndData(
  sql: Sql,
  flowSlug: string,
  force = false,
): Promise<boolean> {
  const [{ exists }] = await sql<{ exists: boolean }[]>`
    select exists (select 1 from sluice.flows where flow_slug = ${flowSlug}) as exists
  `;
  if (!exists) return false;
  await sql`select sluice.delete_flow_and_data(${flowSlug}, force => ${force})`;
  return true;
}

/** One run of {@linkcode listRuns}. */
export interface RunListRow extends Record<string, unknown> {
  run_id: string;
  flow_slug: string;
  status: string;
  steps: number;
  remaining_steps: number;
  started_at: Date;
  finished_at: Date | null;
  error_message: string | null;
  cancel_reason: string | null;
  retry_count: number;
  retried_by: string | null;
}

/** Which runs {@linkcode listRuns} reads; `null` fields do not filter. */
export interface RunFilter {
  readonly flow: string | null;
  readonly status: string | null;
  /** Only runs started since: a timestamp (`2026-11-30T12:00Z`) or an interval back from now. */
  readonly since: string | null;
  readonly limit: number;
  /** Runs to pass over first (a later page). */
  readonly offset: number;
}

/** Runs newest first, filtered by flow, status and start time. */
export async function listRuns(sql: Sql, filter: RunFilter): Promise<RunListRow[]> {
  const { flow, status, since } = filter;
  // A date-like value is a timestamp, anything else an interval back from now.
  const sinceTime = since !== null && /^\d{4}-\d{2}-\d{2}/.test(since) ? since : null;
  const sinceInterval = since !== null && sinceTime === null ? since : null;
  return await sql<RunListRow[]>`
    select r.run_id, r.flow_slug, r.status, r.remaining_steps, r.started_at,
      coalesce(r.completed_at, r.failed_at, r.cancelled_at) as finished_at, r.error_message,
      r.cancel_reason, r.retry_count, r.retried_by,
      (select count(*)::integer from sluice.steps s where s.flow_slug = r.flow_slug) as steps
    from sluice.runs r
    where (${flow}::text is null or r.flow_slug = ${flow}::text)
      and (${status}::text is null or r.status = ${status}::text)
      and (${sinceTime}::timestamptz is null or r.started_at >= ${sinceTime}::timestamptz)
      and (${sinceInterval}::interval is null or r.started_at >= now() - ${sinceInterval}::interval)
    order by r.started_at desc, r.run_id
    limit ${filter.limit} offset ${filter.offset}
  `;
}

/** One function whose `enabled` was set, with its previous value. */
export interface EnabledChange extends Record<string, unknown> {
  function_name: string;
  was_tracked: boolean;
  previous_enabled: boolean;
  enabled: boolean;
}

/** Sets `enabled` per function in one transaction (`sluice.set_worker_functions_enabled`). */
export async function setWorkerFunctionsEnabled(
  sql: Sql,
  settings: Readonly<Record<string, boolean>>,
): Promise<EnabledChange[]> {
  return await sql<EnabledChange[]>`
    select function_name, was_tracked, previous_enabled, enabled
    from sluice.set_worker_functions_enabled(${sql.json(settings)}::jsonb)
  `;
}

/**
 * Names among `names` that have no row in `sluice.worker_functions`, so a typo is reported
 * instead of creating a row.
 */
export async function unknownWorkerFunctions(
  sql: Sql,
  names: readonly string[],
): Promise<string[]> {
  const rows = await sql<{ name: string }[]>`
    select n as name from pg_catalog.unnest(${names as string[]}::text[]) n
    where not exists (select 1 from sluice.worker_functions wf where wf.function_name = n)
    order by n collate "C"
  `;
  return rows.map((row) => row.name);
}

/** The worker functions with a live worker of the flow `flowSlug`, by name. */
export async function liveWorkerFunctionsOf(sql: Sql, flowSlug: string): Promise<string[]> {
  const rows = await sql<{ function_name: string }[]>`
    select distinct w.function_name from sluice.live_workers w where w.flow_slug = ${flowSlug}
    order by 1
  `;
  return rows.map((row) => row.function_name);
}

/** Whether schema `sluice` exists in the database (its migrations were applied). */
export async function isSluiceInstalled(sql: Sql): Promise<boolean> {
  const [{ installed }] = await sql<{ installed: boolean }[]>`
    select to_regnamespace('sluice') is not null as installed
  `;
  return installed;
}

/** A run linked to another by a subflow step (docs/subflows.md): its parent or one of its children. */
export interface SubflowLinkRow extends Record<string, unknown> {
  /** `parent`: the run whose step started the shown run; `child`: a run the shown run started. */
  relation: "parent" | "child";
  run_id: string;
  flow_slug: string;
  status: string;
  /** The subflow step (of the parent) the link goes through, and the child's element index. */
  step_slug: string;
  task_index: number;
}

/** The shown run's parent (if it is a subflow child) and its children, by step and index. */
export async function readSubflowLinks(sql: Sql, runId: string): Promise<SubflowLinkRow[]> {
  return await sql<SubflowLinkRow[]>`
    select 'parent' as relation, p.run_id, p.flow_slug, p.status, r.parent_step_slug as step_slug,
      r.parent_task_index as task_index
    from sluice.runs r join sluice.runs p on p.run_id = r.parent_run_id
    where r.run_id = ${runId}
    union all
    (select 'child', c.run_id, c.flow_slug, c.status, c.parent_step_slug, c.parent_task_index
    from sluice.runs c where c.parent_run_id = ${runId}
    order by c.parent_step_slug collate "C", c.parent_task_index)
  `;
}

/** One dependency edge of a flow: `step_slug` depends on `dep_slug`. */
export interface DependencyRow extends Record<string, unknown> {
  step_slug: string;
  dep_slug: string;
}

/** The dependency edges of a flow, by dependency slug. */
export async function readFlowDependencies(
  sql: Sql,
  flowSlug: string,
): Promise<DependencyRow[]> {
  return await sql<DependencyRow[]>`
    select step_slug, dep_slug from sluice.deps where flow_slug = ${flowSlug}
    order by dep_slug collate "C"
  `;
}

/**
 * `sluice.prune_worker_functions`: deletes the worker functions without a worker for `interval`
 * (PostgreSQL interval text, e.g. `30 days`) and returns their names.
 */
export async function pruneWorkerFunctions(sql: Sql, interval: string): Promise<string[]> {
  const [{ pruned }] = await sql<{ pruned: string[] }[]>`
    select sluice.prune_worker_functions(${interval}::interval) as pruned
  `;
  return pruned;
}

/** What `sluice.archive_messages` did: the ids it archived and the ids not in the queue. */
export interface ArchiveOutcome {
  readonly archived: number[];
  readonly missing: number[];
}

/** `sluice.archive_messages`: archives stray messages (ids as decimal strings) of a queue. */
export async function archiveMessages(
  sql: Sql,
  queue: string,
  messageIds: readonly string[],
): Promise<ArchiveOutcome> {
  const [{ result }] = await sql<{ result: ArchiveOutcome }[]>`
    select sluice.archive_messages(${queue}, ${messageIds as string[]}::bigint[]) as result
  `;
  return result;
}

/** Every compiled flow's slug, with every alias name when `aliases`, in name order. */
export async function listFlowNames(sql: Sql, aliases: boolean): Promise<string[]> {
  const rows = await sql<{ name: string }[]>`
    select f.flow_slug as name from sluice.flows f
    union
    select a.alias from sluice.aliases a where ${aliases}
    order by name
  `;
  return rows.map((row) => row.name);
}

/** The states of a signal `signals` lists (docs/waits.md#signals). */
export const SIGNAL_STATES = ["pending", "released", "expired"] as const;

/**
 * A signal's state: `released` once a wait consumed it, `expired` when its lifetime ended
 * unconsumed, `pending` while it is kept for a wait that starts later.
 */
export type SignalState = typeof SIGNAL_STATES[number];

/** Which signals {@linkcode listSignals} reads; `null` is no filter. */
export interface SignalFilter {
  /** Only signals with this key. */
  readonly key: string | null;
  /** Only signals with a key a step of this run waits or waited on. */
  readonly runId: string | null;
  /** Only signals in this state. */
  readonly state: SignalState | null;
  /** At most this many, newest first. */
  readonly limit: number;
}

/** One row of {@linkcode listSignals}. */
export interface SignalRow extends Record<string, unknown> {
  signal_id: string;
  signal_key: string;
  state: SignalState;
  payload: unknown;
  sent_at: Date;
  sent_by: string;
  expires_at: Date;
  consumed_at: Date | null;
  /** Seconds since it was sent, on the database's clock. */
  age_seconds: number;
  /** Steps waiting on its key now (a pending signal waits for a run started before it). */
  waiting_steps: number;
}

/** `sluice.signals`, newest first, with each signal's state, age and the steps waiting on it. */
export async function listSignals(sql: Sql, filter: SignalFilter): Promise<SignalRow[]> {
  const { key, runId, state } = filter;
  return await sql<SignalRow[]>`
    select s.signal_id, s.signal_key, s.state, s.payload, s.sent_at, s.sent_by, s.expires_at,
      s.consumed_at, extract(epoch from now() - s.sent_at)::float8 as age_seconds,
      (select count(*)::integer from sluice.step_states w
        where w.status = 'waiting' and w.wait_key = s.signal_key) as waiting_steps
    from (
      select s.*, case
          when s.consumed_at is not null then 'released'
          when s.expires_at <= now() then 'expired'
          else 'pending'
        end as state
      from sluice.signals s
      where (${key}::text is null or s.signal_key = ${key}::text)
        and (${runId}::uuid is null or s.signal_key in (
          select w.wait_key from sluice.step_states w
          where w.run_id = ${runId}::uuid and w.wait_key is not null))
    ) s
    where ${state}::text is null or s.state = ${state}::text
    order by s.sent_at desc, s.signal_id
    limit ${filter.limit}
  `;
}

/**
 * `sluice.grant_access(role, flows)`: a producer's and a worker's privileges for `role`, on the
 * given flows (slugs or slug prefixes ending in `*`), or on every flow when `flows` is `null`.
 */
export async function grantAccessRow(
  sql: Sql,
  role: string,
  flows: readonly string[] | null,
): Promise<void> {
  await sql`select sluice.grant_access(${role}::name, ${
    flows === null ? null : [...flows]
  }::text[])`;
}
