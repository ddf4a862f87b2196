/**
 * Every SQL statement of the test helpers (`@sluice/sluice/testing`), one function each.
 *
 * @module
 */

import type { Queryable, Sql } from "./driver/postgres.ts";

/**
 * The test clock: makes the run's delayed messages (queued tasks waiting out a retry delay)
 * visible now, through `pgmq.set_vt`, instead of moving time.
 */
export async function skipRetryDelays(sql: Sql, runId: string): Promise<void> {
  await sql`
    select pgmq.set_vt(t.queue_name, t.message_id, 0)
    from sluice.step_tasks t
    where t.run_id = ${runId} and t.status = 'queued' and t.message_id is not null`;
}

/** The started runs below `runId` in its tree of subflows (its children, theirs, ...). */
export async function liveDescendantRuns(sql: Sql, runId: string): Promise<string[]> {
  const rows = await sql<{ run_id: string }[]>`
    with recursive d(run_id, status) as (
      select r.run_id, r.status from sluice.runs r where r.parent_run_id = ${runId}
      union all
      select r.run_id, r.status from sluice.runs r join d on r.parent_run_id = d.run_id
    )
    select run_id from d where status = 'started'`;
  return rows.map((row) => row.run_id);
}

/** Which of a run's waits `releaseRunWaits` makes due now. */
export interface RunWaitsToRelease {
  /** Sleeps, which then complete as if their due time had come. */
  sleeps: boolean;
  /** Signal waits with a timeout, which then follow their `onTimeout` as if it had passed. */
  timeouts: boolean;
}

/**
 * Makes the run's waiting sleeps and/or signal-wait timeouts due now and releases them: one
 * transaction that locks the run, then its step states (the lock order), then the sweep. A
 * released sleep completes with its new due time: now.
 *
 * @returns How many waits were released.
 */
export async function releaseRunWaits(
  sql: Sql,
  runId: string,
  which: RunWaitsToRelease,
): Promise<number> {
  if (!which.sleeps && !which.timeouts) return 0;
  return await sql.begin(async (tx) => {
    const [run] = await tx`
      select 1 from sluice.runs where run_id = ${runId} and status = 'started' for update`;
    if (run === undefined) return 0;
    const moved = await tx`
      update sluice.step_states ss set wait_until = now()
      from sluice.steps s
      where ss.run_id = ${runId} and ss.status = 'waiting' and ss.wait_until > now()
        and s.flow_slug = ss.flow_slug and s.step_slug = ss.step_slug
        and ((s.step_type = 'sleep' and ${which.sleeps})
          or (s.step_type = 'signal' and ${which.timeouts}))`;
    return moved.count === 0 ? 0 : await releaseAllDueWaits(tx);
  });
}

/** Runs the sweep of due waits until it finds no more; returns how many it released. */
async function releaseAllDueWaits(tx: Queryable): Promise<number> {
  let total = 0;
  for (;;) {
    const [{ released }] = await tx<{ released: number }[]>`
      select sluice.release_due_waits(1000) as released`;
    total += released;
    if (released < 1000) return total;
  }
}

/**
 * The test clock's move: puts every started task's `started_at`, every PGMQ message's visibility
 * time, every waiting step's due time or timeout, every kept signal's expiry and every pending
 * debounced start's times `seconds` back, releases the waits that are due then, starts the
 * debounced runs that are due then, runs stall recovery and wakes every queue's workers, in one
 * transaction.
 *
 * @returns How many stalled tasks stall recovery handled.
 */
export async function advanceClock(sql: Sql, seconds: number): Promise<number> {
  return await sql.begin(async (tx) => {
    await tx`
      update sluice.step_tasks set started_at = started_at - make_interval(secs => ${seconds})
      where status = 'started' and started_at is not null`;
    const queues = await tx<{ queue_name: string }[]>`select queue_name from pgmq.meta`;
    for (const { queue_name } of queues) {
      // One table per queue: the driver quotes its name as an identifier.
      await tx`
        update pgmq.${tx(`q_${queue_name}`)} set vt = vt - make_interval(secs => ${seconds})`;
    }
    // Lock order runs -> step_states: the runs of the waits it moves first, in run_id order.
    await tx`
      select 1 from sluice.runs r
      where r.run_id in (
        select ss.run_id from sluice.step_states ss
        where ss.status = 'waiting' and ss.wait_until is not null
      )
      order by r.run_id
      for update`;
    await tx`
      update sluice.step_states set wait_until = wait_until - make_interval(secs => ${seconds})
      where status = 'waiting' and wait_until is not null`;
    // Kept signals age too: one past its lifetime completes no wait.
    await tx`
      update sluice.signals set expires_at = expires_at - make_interval(secs => ${seconds})
      where consumed_at is null`;
    await releaseAllDueWaits(tx);
    // Pending debounced starts age too: one whose window closed on the test clock starts.
    await tx`
      update sluice.debounced_starts
      set due_at = due_at - make_interval(secs => ${seconds}),
        max_due_at = max_due_at - make_interval(secs => ${seconds}),
        first_at = first_at - make_interval(secs => ${seconds}),
        last_at = last_at - make_interval(secs => ${seconds})`;
    for (;;) {
      const [{ started }] = await tx<{ started: number }[]>`
        select sluice.start_due_debounced(1000) as started`;
      if (started < 1000) break;
    }
    const [{ handled }] = await tx<{ handled: number }[]>`
      select sluice.requeue_stalled_tasks() as handled`;
    for (const { queue_name } of queues) await tx`select sluice.notify_queue(${queue_name})`;
    return handled;
  });
}
