/**
 * The sluice version: one flow, `community_threads`, with a private queue and its own workers per
 * step (`deno task functions:generate` writes one Edge Function per step from this module).
 * Retrying, backoff, visibility, crash recovery and the hand-off from `classify` to
 * `deliver_slack` are the engine's; what is left here is the domain decision of each step.
 *
 * @module
 */

import { Flow, getRunTasks, withStepQueues } from "@sluice/sluice";
import { RetryAfterError } from "@sluice/sluice/worker";
import { classifierFromEnv } from "./classifier.ts";
import { slackFromEnv } from "./slack.ts";
import {
  attemptDelivery,
  failureReason,
  loadThread,
  recordClassification,
  recordDeliveryFailed,
} from "./threads.ts";

/**
 * Classifies a new thread, then alerts Slack about an urgent one. `deliver_slack` runs only when
 * `classify` said `urgent: true`; a Slack 429 retries after Slack's `Retry-After`, anything else
 * after the exponential backoff. When its 4th attempt failed or stalled (its worker died), the step
 * is skipped and `mark_failed` marks the thread `failed`; the run completes either way.
 */
export const communityThreads = withStepQueues(
  new Flow<{ threadId: number }>({
    slug: "community_threads",
    maxAttempts: 3,
    baseDelay: 1,
  })
    .step({ slug: "classify", timeout: 30 }, async (input, ctx) => {
      const thread = await loadThread(ctx.sql, input.threadId);
      const classification = await classifierFromEnv(ctx.env).classify(
        thread,
        ctx.signal,
      );
      await ctx.sql.begin((tx) => recordClassification(tx, input.threadId, classification));
      return classification;
    })
    .step(
      {
        slug: "deliver_slack",
        dependsOn: ["classify"],
        if: { classify: { urgent: true } },
        // A thread that needs no alert skips mark_failed too.
        whenUnmet: "skip-cascade",
        // Exhausted, however the last attempt ended: mark_failed runs without this step's output.
        whenExhausted: "skip",
        maxAttempts: 4,
        timeout: 3,
      },
      async (_deps, ctx) => {
        const result = await attemptDelivery(
          ctx.sql,
          slackFromEnv(ctx.env),
          ctx.flowInput.threadId,
          ctx.signal,
        );
        if (result.kind === "sent" || result.kind === "already_sent") {
          return { slackTs: result.ts };
        }
        if (result.kind === "already_failed") return { slackTs: null };
        const reason = failureReason(result);
        if (result.kind === "rate_limited") {
          throw new RetryAfterError(result.retryAfterSeconds, {
            cause: new Error(reason),
          });
        }
        throw new Error(reason);
      },
    )
    .step(
      {
        slug: "mark_failed",
        dependsOn: ["deliver_slack"],
        // Runs only when deliver_slack has no output (`{}` contains any object): it was exhausted.
        ifNot: { deliver_slack: {} },
      },
      async (_deps, ctx) => {
        const tasks = await getRunTasks(ctx.sql, ctx.runId);
        const delivery = tasks.find((task) => task.stepSlug === "deliver_slack");
        const reason = delivery?.lastError ?? "the alert delivery was given up on";
        await ctx.sql.begin((tx) => recordDeliveryFailed(tx, ctx.flowInput.threadId, reason));
        return { reason };
      },
    ),
);
