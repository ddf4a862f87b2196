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
