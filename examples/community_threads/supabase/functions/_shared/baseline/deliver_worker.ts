/**
 * Baseline delivery worker: reads `deliver_slack_alerts` and posts each alert; a Slack 429 hides
 * the message for Slack's `Retry-After`, other failures for the queue worker's backoff, and the
 * dead letter after the last attempt marks the thread `failed`.
 *
 * @module
 */

import { slackFromEnv } from "../slack.ts";
import { attemptDelivery, failureReason, recordDeliveryFailed } from "../threads.ts";
import type { BaselineWorkerOptions } from "./classify_worker.ts";
import { type QueueWorker, startQueueWorker } from "./queue_worker.ts";

/** Starts a worker on `deliver_slack_alerts`. */
export function startDeliverWorker(
  options: BaselineWorkerOptions,
): QueueWorker {
  const slack = slackFromEnv(options.env ?? Deno.env.toObject());
  const { sql } = options;
  return startQueueWorker<{ thread_id: number }>({
    sql,
    queue: "deliver_slack_alerts",
    deadLetterQueue: "deliver_slack_alerts_dlq",
    // Longer than Slack's timeout plus the database writes around the post.
    visibilitySeconds: 5,
    maxAttempts: 4,
    maxConcurrent: options.maxConcurrent ?? 10,
    async handle({ body }, signal) {
      const result = await attemptDelivery(sql, slack, body.thread_id, signal);
      if (result.kind === "sent" || result.kind === "already_sent") {
        return { kind: "done" };
      }
      if (result.kind === "already_failed") return { kind: "done" };
      if (result.kind === "rate_limited") {
        return {
          kind: "retry",
          delaySeconds: result.retryAfterSeconds,
          reason: failureReason(result),
        };
      }
      throw new Error(failureReason(result));
    },
    onDeadLetter: (tx, body, reason) => recordDeliveryFailed(tx, body.thread_id, reason),
  });
}
