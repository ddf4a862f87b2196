/**
 * Intake of the sluice version: a new thread and the run that classifies it, in one transaction.
 *
 * @module
 */

import type { Sql } from "postgres";
import { startFlow } from "@sluice/sluice";
import { communityThreads } from "./flows.ts";
import { insertThread, type NewThread } from "./threads.ts";

/** Stores `thread` and starts its `community_threads` run; returns the thread id. */
export async function submitThread(
  sql: Sql,
  thread: NewThread,
): Promise<number> {
  return await sql.begin(async (tx) => {
    const threadId = await insertThread(tx, thread);
    await startFlow(tx, communityThreads, { threadId });
    return threadId;
  });
}
