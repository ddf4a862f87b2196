/**
 * The chaos benchmark's audit: what the engine's tables and the handlers' execution log say
 * about the run. Every query reads flow `chaos` only. The definitions are in bench/README.md.
 *
 * @module
 */
import type { Sql } from "postgres";
import { MAX_ATTEMPTS, STALL_WINDOW_SECONDS } from "./_chaos_flow.ts";

/**
 * Seconds past the stall window after which a `started` task counts as stuck: recovery runs about
 * once a second on every live worker's heartbeat; the rest is slack for a loaded machine.
 */
export const RECOVERY_SLACK_SECONDS = 10;

/**
 * A task stays live for overlap purposes only this long after it started: by then recovery may
 * rightly give it to another worker. One second short of the stall window, because the window
 * counts from the claim, a moment before the handler starts.
 */
const LIVE_SECONDS = STALL_WINDOW_SECONDS - 1;

/** Runs of the flow by status. */
export interface RunCounts {
  completed: number;
  failed: number;
  cancelled: number;
  started: number;
}

/** The audit's findings. */
export interface Audit {
  /** Tasks `queued` or `started` whose message is gone from the queue. */
  lost: number;
  /** Completed tasks whose output is not a recorded success of their final attempt, described. */
  notBacked: string[];
  /** Pairs of executions of one task that overlapped while both were live, described. */
  overlapping: string[];
  /** Tasks claimed, or seen by a handler, more than `MAX_ATTEMPTS` times. */
  aboveMaxAttempts: number;
  /** Executions recorded. */
  executions: number;
}

/** Counts the runs by status. */
export async function runCounts(sql: Sql): Promise<RunCounts> {
  const [counts] = await sql<RunCounts[]>`
    select count(*) filter (where status = 'completed')::int as completed,
      count(*) filter (where status = 'failed')::int as failed,
      count(*) filter (where status = 'cancelled')::int as cancelled,
      count(*) filter (where status = 'started')::int as started
    from sluice.runs where flow_slug = 'chaos'`;
  return counts;
}

/** Keys (`run/step/index`) of tasks `started` longer than the stall window plus the slack. */
export async function stuckTasks(sql: Sql): Promise<string[]> {
  const rows = await sql<{ key: string }[]>`
    select concat_ws('/', run_id, step_slug, task_index) as key
    from sluice.step_tasks
    where flow_slug = 'chaos' and status = 'started'
      and started_at < now() - make_interval(secs => ${
    STALL_WINDOW_SECONDS + RECOVERY_SLACK_SECONDS
  })`;
  return rows.map((row) => row.key);
}

/** `pg_stat_database.deadlocks` of the current database. */
export async function deadlocks(sql: Sql): Promise<number> {
  const [{ count }] = await sql<{ count: number }[]>`
    select deadlocks::int as count from pg_stat_database where datname = current_database()`;
  return count;
}

/**
 * When the first task completed in a transaction that began after the server last started, or
 * `undefined`.
 */
export async function firstCompletionSinceStart(sql: Sql): Promise<Date | undefined> {
  const [{ at }] = await sql<{ at: Date | null }[]>`
    select min(completed_at) as at from sluice.step_tasks
    where flow_slug = 'chaos' and completed_at >= pg_postmaster_start_time()`;
  return at ?? undefined;
}

/** Audits the finished benchmark (after the fleet wrote `chaos.workers`). */
export async function audit(sql: Sql): Promise<Audit> {
  const [counts] = await sql<{ lost: number; aboveMaxAttempts: number; executions: number }[]>`
    select
      (select count(*)::int from sluice.step_tasks t
        where t.flow_slug = 'chaos' and t.status in ('queued', 'started')
          and not exists (select 1 from pgmq.q_chaos q where q.msg_id = t.message_id)
      ) as lost,
      (select count(*)::int from sluice.step_tasks t
        -- Each retry round of a run gives its requeued tasks maxAttempts more from attempts_base.
        where t.flow_slug = 'chaos' and (t.attempts_count > t.attempts_base + ${MAX_ATTEMPTS}
          or exists (
            select 1 from chaos.executions e
            where (e.run_id, e.step_slug, e.task_index) = (t.run_id, t.step_slug, t.task_index)
              and e.attempt > t.attempts_base + ${MAX_ATTEMPTS}))
      ) as "aboveMaxAttempts",
      (select count(*)::int from chaos.executions) as executions`;
  const notBacked = await sql<{ line: string }[]>`
    select format('%s %s[%s]: completed at attempt %s with the output of execution %s (%s)',
      t.run_id, t.step_slug, t.task_index, t.attempts_count, t.output ->> 'execution',
      coalesce(format('attempt %s on %s, %s', e.attempt, e.worker, e.outcome), 'not recorded')
    ) as line
    from sluice.step_tasks t
    left join chaos.executions e on e.id = (t.output ->> 'execution')::uuid
      and (e.run_id, e.step_slug, e.task_index) = (t.run_id, t.step_slug, t.task_index)
    where t.flow_slug = 'chaos' and t.status = 'completed'
      and (e.id is null or e.outcome <> 'succeeded' or e.attempt <> t.attempts_count)
    order by t.completed_at`;
  const overlapping = await sql<{ line: string }[]>`
    with lived as (
      -- An execution cut short by a kill ends when its worker was killed.
      select e.*, coalesce(e.ended_at, w.stopped_at) as end_at
      from chaos.executions e join chaos.workers w on w.name = e.worker
    )
    select format('%s %s[%s]: attempt %s on %s (%s .. %s) and attempt %s on %s (%s .. %s)',
      a.run_id, a.step_slug, a.task_index, a.attempt, a.worker, a.started_at::time, a.end_at::time,
      b.attempt, b.worker, b.started_at::time, b.end_at::time) as line
    from lived a
    join lived b on (b.run_id, b.step_slug, b.task_index) = (a.run_id, a.step_slug, a.task_index)
      and (b.started_at, b.id) > (a.started_at, a.id)
    -- A lower attempt that starts after a higher one sat on its claim past the stall window:
    -- the engine had already given the task away.
    where b.attempt >= a.attempt
      and b.started_at < least(a.end_at, a.started_at + make_interval(secs => ${LIVE_SECONDS}))
      -- A cancel fences the attempts it finds; one still running until its worker's next
      -- heartbeat aborts it may meet the attempt of a retry. Claims after a cancel are audited by
      -- run control (bench/_chaos_control.ts) instead.
      and not exists (select 1 from chaos.transitions k
        where k.run_id = a.run_id and k.status = 'cancelled')
    order by a.started_at`;
  return {
    ...counts,
    notBacked: notBacked.map((row) => row.line),
    overlapping: overlapping.map((row) => row.line),
  };
}

/** Executions of `worker` in progress at `at` (started before, not ended before). */
export async function executionsInFlight(sql: Sql, worker: string, at: Date): Promise<number> {
  const [{ count }] = await sql<{ count: number }[]>`
    select count(*)::int as count
    from chaos.executions e join chaos.workers w on w.name = e.worker
    where e.worker = ${worker} and e.started_at < ${at}
      and coalesce(e.ended_at, w.stopped_at) > ${at}`;
  return count;
}

/**
 * Whether a task that `worker` had in flight at `at` runs again, as a later attempt that began
 * once the first one had outlived its stall window (so recovery handed it out): the moment to wake
 * a frozen worker, so that its late reports meet a live attempt.
 */
export async function reclaimedAndRunning(sql: Sql, worker: string, at: Date): Promise<boolean> {
  const [{ found }] = await sql<{ found: boolean }[]>`
    select exists (
      select 1 from chaos.executions a
      join chaos.executions b using (run_id, step_slug, task_index)
      where a.worker = ${worker} and a.started_at < ${at} and a.ended_at is null
        and b.attempt > a.attempt and b.ended_at is null
        and b.started_at >= a.started_at + make_interval(secs => ${LIVE_SECONDS})
    ) as found`;
  return found;
}

/** Why runs failed: their error messages with ids and numbers blanked out, most frequent first. */
export async function failureCauses(sql: Sql): Promise<string[]> {
  const rows = await sql<{ line: string }[]>`
    select format('%s × %s', count(*), cause) as line
    from (
      select left(regexp_replace(split_part(error_message, E'\n', 1),
        '[0-9a-f]{8}-[0-9a-f-]{27}|[0-9]+', '#', 'g'), 160) as cause
      from sluice.runs where flow_slug = 'chaos' and status = 'failed'
    ) r
    group by cause order by count(*) desc`;
  return rows.map((row) => row.line);
}
