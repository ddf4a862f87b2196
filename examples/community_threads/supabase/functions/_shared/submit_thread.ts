/**
 * Intake of the sluice version: a new thread and the run that classifies it, in one transaction.
 * `startFlow()` takes a pool, not a transaction, so the run is started with the SQL function it
 * calls, `sluice.start_flow`, on the transaction; the input is still checked against the flow's
 * input type.
 *
 * @module
 */

import type { Sql } from "postgres";
import type { FlowInput } from "@sluice/sluice";
import { communityThreads } from "./flows.ts";
import { insertThread, type NewThread } from "./threads.ts";

/** Stores `thread` and starts its `community_threads` run; returns the thread id. */
export async function submitThread(
  sql: Sql,
  thread: NewThread,
): Promise<number> {
  return await sql.begin(async (tx) => {
    const threadId = await insertThread(tx, thread);
    const input: FlowInput<typeof communityThreads> = { threadId };
    await tx`select sluice.start_flow(${communityThreads.flow.slug}, ${tx.json(input)}::jsonb)`;
    return threadId;
  });
}
