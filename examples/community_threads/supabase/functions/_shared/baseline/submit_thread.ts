/**
 * Intake of the baseline version: a new thread and its `classify_threads` message, in one
 * transaction.
 *
 * @module
 */

import type { Sql } from "postgres";
import { insertThread, type NewThread } from "../threads.ts";

/** Stores `thread` and queues its classification; returns the thread id. */
export async function submitThread(
  sql: Sql,
  thread: NewThread,
): Promise<number> {
  return await sql.begin(async (tx) => {
    const threadId = await insertThread(tx, thread);
    await tx`select pgmq.send('classify_threads', ${tx.json({ thread_id: threadId })}::jsonb)`;
    return threadId;
  });
}
