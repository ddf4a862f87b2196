/**
 * The statements of the web dashboard (`src/dashboard/`) beyond the ones it shares with the
 * operator CLI (ops_queries.ts) and the client (getRun): counts for the overview, a flow's steps
 * and stored shape, and a run's tasks summed per step.
 *
 * @module
 */

import type { Sql } from "./driver/postgres.ts";
import type { FunctionRow } from "./ops_queries.ts";

/** One worker function for the overview: its status and when a worker of it last beat. */
export interface FunctionOverviewRow extends FunctionRow {
  last_heartbeat_at: Date | null;
}

/**
 * `sluice.worker_function_status` with each function's latest heartbeat of any worker (a stopped
 * or vanished one too: when did it last live), by name.
 */
export async function readFunctionOverview(sql: Sql): Promise<FunctionOverviewRow[]> {
  return await sql<FunctionOverviewRow[]>`
    select s.function_name, s.enabled, s.restart_paused, s.restart_paused_at, s.pause_reason,
      s.last_invoked_at, s.live_workers,
      (select max(w.last_heartbeat_at) from sluice.workers w
       where w.function_name = s.function_name) as last_heartbeat_at
    from sluice.worker_function_status s
    order by s.function_name collate "C"
  `;
}

/** Runs started within `interval` (e.g. `1 hour`), counted per status. */
export async function countRunsByStatusSince(
  sql: Sql,
  interval: string,
): Promise<Record<string, number>> {
  const rows = await sql<{ status: string; runs: number }[]>`
    select status, count(*)::integer as runs from sluice.runs
    where started_at >= now() - ${interval}::interval
    group by status
  `;
  return Object.fromEntries(rows.map((row) => [row.status, row.runs]));
}

/** One compiled flow for the overview. */
export interface FlowSummaryRow extends Record<string, unknown> {
  flow_slug: string;
  queue_mode: string;
  steps: number;
  created_at: Date;
}

/** Every compiled flow with its step count, by slug. */
export async function readFlowSummaries(sql: Sql): Promise<FlowSummaryRow[]> {
  return await sql<FlowSummaryRow[]>`
    select f.flow_slug, f.queue_mode, f.created_at,
      (select count(*)::integer from sluice.steps s where s.flow_slug = f.flow_slug) as steps
    from sluice.flows f
    order by f.flow_slug collate "C"
  `;
}

/** A compiled flow: its options and stored shape (what workers are checked against). */
export interface FlowRow extends Record<string, unknown> {
  flow_slug: string;
  queue_mode: string;
  opt_max_attempts: number;
  opt_base_delay: number;
  opt_timeout: number;
  created_at: Date;
  shape: unknown;
  aliases: string[];
}

/** The flow row, its aliases and `sluice.stored_shape`; `null` when no flow has that slug. */
export async function readFlow(sql: Sql, flowSlug: string): Promise<FlowRow | null> {
  const rows = await sql<FlowRow[]>`
    select f.flow_slug, f.queue_mode, f.opt_max_attempts, f.opt_base_delay, f.opt_timeout,
      f.created_at, sluice.stored_shape(f.flow_slug) as shape,
      array(select a.alias from sluice.aliases a where a.flow_slug = f.flow_slug
            order by a.alias collate "C") as aliases
    from sluice.flows f
    where f.flow_slug = ${flowSlug}
  `;
  return rows[0] ?? null;
}

/** One step of a compiled flow, with its dependencies. */
export interface FlowStepRow extends Record<string, unknown> {
  step_slug: string;
  step_index: number;
  step_type: string;
  map_source: string | null;
  deps: string[];
  queue_name: string;
  opt_max_attempts: number | null;
  opt_base_delay: number | null;
  opt_timeout: number | null;
  opt_start_delay: number | null;
  required_input_pattern: unknown;
  forbidden_input_pattern: unknown;
  when_unmet: string;
  when_exhausted: string;
}

/** The steps of a flow in definition order (every dependency precedes its dependents). */
export async function readFlowSteps(sql: Sql, flowSlug: string): Promise<FlowStepRow[]> {
  return await sql<FlowStepRow[]>`
    select s.step_slug, s.step_index, s.step_type, s.map_source, s.queue_name,
      array(select d.dep_slug from sluice.deps d
            where d.flow_slug = s.flow_slug and d.step_slug = s.step_slug
            order by d.dep_slug collate "C") as deps,
      s.opt_max_attempts, s.opt_base_delay, s.opt_timeout, s.opt_start_delay,
      s.required_input_pattern, s.forbidden_input_pattern, s.when_unmet, s.when_exhausted
    from sluice.steps s
    where s.flow_slug = ${flowSlug}
    order by s.step_index
  `;
}

/** A run's tasks of one step, summed: counts per status, attempts and the latest error. */
export interface StepTaskSummaryRow extends Record<string, unknown> {
  step_slug: string;
  tasks: number;
  queued: number;
  started: number;
  completed: number;
  failed: number;
  attempts: number;
  stalled_requeues: number;
  last_error: string | null;
}

/**
 * The tasks of a run summed per step: a map step of thousands of tasks reads as one row. The last
 * error is that of the task whose attempt ended most recently with one.
 */
export async function readStepTaskSummaries(
  sql: Sql,
  runId: string,
): Promise<StepTaskSummaryRow[]> {
  return await sql<StepTaskSummaryRow[]>`
    select t.step_slug, count(*)::integer as tasks,
      count(*) filter (where t.status = 'queued')::integer as queued,
      count(*) filter (where t.status = 'started')::integer as started,
      count(*) filter (where t.status = 'completed')::integer as completed,
      count(*) filter (where t.status = 'failed')::integer as failed,
      sum(t.attempts_count)::integer as attempts,
      sum(t.requeued_count)::integer as stalled_requeues,
      (pg_catalog.array_agg(t.error_message order by t.started_at desc nulls last, t.task_index)
        filter (where t.error_message is not null))[1] as last_error
    from sluice.step_tasks t
    where t.run_id = ${runId}::uuid
    group by t.step_slug
  `;
}

/**
 * The queues that only wait steps (sleep, signal, subflow) name: a step-queued flow's wait step
 * gets a queue like any step, but no message ever goes through it and no worker serves it.
 */
export async function readWaitOnlyQueues(sql: Sql): Promise<string[]> {
  const rows = await sql<{ queue_name: string }[]>`
    select s.queue_name from sluice.steps s
    group by s.queue_name
    having bool_and(s.step_type in ('sleep', 'signal', 'subflow'))
    order by s.queue_name collate "C"
  `;
  return rows.map((row) => row.queue_name);
}

/** One task on a run's timeline, with its step's task totals and time span. */
export interface TimelineTaskRow extends Record<string, unknown> {
  step_slug: string;
  task_index: number;
  status: string;
  /** Attempts since the run's last retry (`attempts_count - attempts_base`). */
  attempts: number;
  stalled_requeues: number;
  queued_at: Date;
  /** The latest attempt's start (every claim sets it). */
  started_at: Date | null;
  ended_at: Date | null;
  cancelled_at: Date | null;
  error_message: string | null;
  /**
   * The backoff before each retry so far, by the step's policy (`sluice.backoff_delay_seconds`),
   * and for a task queued again after a failure the one it waits now. A worker's own
   * `retryDelaySeconds` is not stored: the policy's is shown.
   */
  backoff_seconds: number[];
  /** The step's tasks in all, how many completed and failed. */
  step_tasks: number;
  step_completed: number;
  step_failed: number;
  /** The step's earliest queue time, earliest start and latest end over all its tasks. */
  step_first_queued_at: Date;
  step_first_started_at: Date | null;
  step_last_ended_at: Date | null;
}

/** Tasks per step the timeline reads at most (a 10,000-task map reads as its totals and these). */
export const TIMELINE_TASKS_PER_STEP = 8;

/**
 * A run's tasks for its timeline: per step the {@linkcode TIMELINE_TASKS_PER_STEP} most telling
 * (failed first, then by attempts, then running, then by index), each with its step's totals and
 * span, and the database's `now()` (where a bar still going ends).
 */
export async function readRunTimeline(
  sql: Sql,
  runId: string,
): Promise<{ now: Date; tasks: TimelineTaskRow[] }> {
  // Totals by a hash aggregate, the telling tasks by a top-N sort per step: no full sort of a
  // large map's tasks.
  const rows = await sql<(TimelineTaskRow & { now: Date })[]>`
    with totals as (
      select t.step_slug, t.flow_slug, count(*)::integer as step_tasks,
        count(*) filter (where t.status = 'completed')::integer as step_completed,
        count(*) filter (where t.status = 'failed')::integer as step_failed,
        min(t.queued_at) as step_first_queued_at, min(t.started_at) as step_first_started_at,
        max(coalesce(t.completed_at, t.failed_at, t.skipped_at, t.cancelled_at))
          as step_last_ended_at
      from sluice.step_tasks t
      where t.run_id = ${runId}::uuid
      group by t.step_slug, t.flow_slug
    )
    select x.step_slug, r.task_index, r.status, r.attempts, r.requeued_count as stalled_requeues,
      r.queued_at, r.started_at, r.ended_at, r.cancelled_at, r.error_message,
      array(
        select sluice.backoff_delay_seconds(coalesce(s.opt_base_delay, f.opt_base_delay), g)
        from generate_series(1, r.attempts - case when r.status = 'queued' then 0 else 1 end) g
      ) as backoff_seconds,
      x.step_tasks, x.step_completed, x.step_failed, x.step_first_queued_at,
      x.step_first_started_at, x.step_last_ended_at, now() as now
    from totals x
    join sluice.steps s on s.flow_slug = x.flow_slug and s.step_slug = x.step_slug
    join sluice.flows f on f.flow_slug = x.flow_slug
    cross join lateral (
      select t.task_index, t.status, (t.attempts_count - t.attempts_base)::integer as attempts,
        t.requeued_count, t.queued_at, t.started_at, t.cancelled_at, t.error_message,
        coalesce(t.completed_at, t.failed_at, t.skipped_at, t.cancelled_at) as ended_at
      from sluice.step_tasks t
      where t.run_id = ${runId}::uuid and t.step_slug = x.step_slug
      order by (t.status = 'failed') desc, t.attempts_count - t.attempts_base desc,
        (t.status = 'started') desc, t.task_index
      limit ${TIMELINE_TASKS_PER_STEP}
    ) r
    order by s.step_index, r.task_index
  `;
  const now = rows[0]?.now ?? (await sql<{ now: Date }[]>`select now() as now`)[0].now;
  return { now, tasks: rows.map(({ now: _, ...task }) => task) };
}

/** One minute of a flow's last hour: what finished in it and how long it took. */
export interface FlowMinuteRow extends Record<string, unknown> {
  minute: Date;
  runs_completed: number;
  runs_failed: number;
  /** The 95th percentile of the completed runs' durations (start to end), seconds. */
  run_p95_seconds: number | null;
  tasks_completed: number;
  /** The 95th percentile of the completed tasks' last attempts (start to end), seconds. */
  task_p95_seconds: number | null;
}

/**
 * A flow's last 60 minutes, one row per minute (oldest first, the current minute last): runs
 * finished and tasks completed in it, with their p95 durations. Runs are found through the
 * finished-runs index; tasks through their runs (a task completed in the last hour belongs to a
 * run still going or finished since), so no task table scan.
 */
export async function readFlowLastHour(sql: Sql, flowSlug: string): Promise<FlowMinuteRow[]> {
  return await sql<FlowMinuteRow[]>`
    with since as (
      select date_trunc('minute', now()) - interval '59 minutes' as at
    ), minutes as (
      select generate_series(s.at, s.at + interval '59 minutes', interval '1 minute') as minute
      from since s
    ), finished as (
      select r.run_id, r.status, coalesce(r.completed_at, r.failed_at, r.cancelled_at) as ended_at,
        r.started_at
      from sluice.runs r, since s
      where r.flow_slug = ${flowSlug} and r.status <> 'started'
        and coalesce(r.completed_at, r.failed_at, r.cancelled_at) >= s.at
    ), runs_by_minute as (
      select date_trunc('minute', f.ended_at) as minute,
        count(*) filter (where f.status = 'completed')::integer as runs_completed,
        count(*) filter (where f.status = 'failed')::integer as runs_failed,
        (percentile_cont(0.95) within group (
          order by extract(epoch from f.ended_at - f.started_at)
        ) filter (where f.status = 'completed'))::float8 as run_p95_seconds
      from finished f
      group by 1
    ), tasks_by_minute as (
      select date_trunc('minute', t.completed_at) as minute, count(*)::integer as tasks_completed,
        (percentile_cont(0.95) within group (
          order by extract(epoch from t.completed_at - t.started_at)
        ))::float8 as task_p95_seconds
      from (
        select f.run_id from finished f
        union all
        select r.run_id from sluice.runs r where r.flow_slug = ${flowSlug} and r.status = 'started'
      ) x
      join sluice.step_tasks t on t.run_id = x.run_id
      cross join since s
      where t.status = 'completed' and t.completed_at >= s.at
      group by 1
    )
    select m.minute, coalesce(r.runs_completed, 0) as runs_completed,
      coalesce(r.runs_failed, 0) as runs_failed, r.run_p95_seconds,
      coalesce(t.tasks_completed, 0) as tasks_completed, t.task_p95_seconds
    from minutes m
    left join runs_by_minute r on r.minute = m.minute
    left join tasks_by_minute t on t.minute = m.minute
    order by m.minute
  `;
}

/** One schedule for the schedules page, with the flow it starts and its last run's status. */
export interface ScheduleOverviewRow extends Record<string, unknown> {
  schedule_name: string;
  target_kind: "flow" | "alias";
  target: string;
  /** The concrete flow: the target, or the flow its alias points at now (`null`: none). */
  flow_slug: string | null;
  cron: string;
  timezone: string;
  missed: string;
  next_due_at: Date | null;
  paused_at: Date | null;
  last_fired_at: Date | null;
  last_run_id: string | null;
  last_run_status: string | null;
  last_error: string | null;
  /** The database's time now, for how soon or how late. */
  now: Date;
}

/** Every schedule by name, with the flow it starts and its last run's status. */
export async function readScheduleOverview(sql: Sql): Promise<ScheduleOverviewRow[]> {
  return await sql<ScheduleOverviewRow[]>`
    select s.schedule_name, s.target_kind, s.target,
      case when s.target_kind = 'flow' then s.target else a.flow_slug end as flow_slug,
      s.cron, s.timezone, s.missed, s.next_due_at, s.paused_at, s.last_fired_at, s.last_run_id,
      r.status as last_run_status, s.last_error, now() as now
    from sluice.schedules s
    left join sluice.aliases a on s.target_kind = 'alias' and a.alias = s.target
    left join sluice.runs r on r.run_id = s.last_run_id
    order by s.schedule_name collate "C"
  `;
}
