/**
 * Every SQL statement of the test helpers (`@sluice/sluice/testing`), one function each.
 *
 * @module
 */

import type { Sql } from "./postgres.ts";

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

/**
 * The test clock's move: puts every started task's `started_at` and every PGMQ message's
 * visibility time `seconds` back, runs stall recovery and wakes every queue's workers, in one
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
    const [{ handled }] = await tx<{ handled: number }[]>`
      select sluice.requeue_stalled_tasks() as handled`;
    for (const { queue_name } of queues) await tx`select sluice.notify_queue(${queue_name})`;
    return handled;
  });
}
