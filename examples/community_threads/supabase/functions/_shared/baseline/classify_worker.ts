/**
 * Baseline classification worker: reads `classify_threads`, classifies the thread and, in the
 * transaction that records the classification, queues an urgent thread on `deliver_slack_alerts`.
 *
 * @module
 */

import type { Sql } from "postgres";
import { classifierFromEnv } from "../classifier.ts";
import { loadThread, recordClassification } from "../threads.ts";
import { type QueueWorker, startQueueWorker } from "./queue_worker.ts";

/** Options of {@linkcode startClassifyWorker}. */
export interface BaselineWorkerOptions {
  /** The pool to use. */
  readonly sql: Sql;
  /** Messages handled at once. @default {10} */
  readonly maxConcurrent?: number;
  /** The environment (classifier and Slack settings). @default {Deno.env.toObject()} */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** Starts a worker on `classify_threads`. */
export function startClassifyWorker(
  options: BaselineWorkerOptions,
): QueueWorker {
  const classifier = classifierFromEnv(options.env ?? Deno.env.toObject());
  const { sql } = options;
  return startQueueWorker<{ thread_id: number }>({
    sql,
    queue: "classify_threads",
    deadLetterQueue: "classify_threads_dlq",
    visibilitySeconds: 30,
    maxAttempts: 3,
    maxConcurrent: options.maxConcurrent ?? 10,
    async handle({ body }, signal) {
      const thread = await loadThread(sql, body.thread_id);
      const classification = await classifier.classify(thread, signal);
      await sql.begin(async (tx) => {
        const outcome = await recordClassification(
          tx,
          body.thread_id,
          classification,
        );
        if (outcome === "recorded" && classification.urgent) {
          await tx`select pgmq.send('deliver_slack_alerts', ${
            tx.json({ thread_id: body.thread_id })
          }::jsonb)`;
        }
      });
      return { kind: "done" };
    },
    // A thread whose classification failed for good stays `new`, visible in the dead-letter queue.
    onDeadLetter: async () => {},
  });
}
