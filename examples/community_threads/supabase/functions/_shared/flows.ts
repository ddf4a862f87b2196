/**
 * The sluice version: one flow, `community_threads`, with a private queue and its own workers per
 * step (`deno task functions:generate` writes one Edge Function per step from this module).
 * Retrying, backoff, visibility, crash recovery and the hand-off from `classify` to
 * `deliver_slack` are the engine's; what is left here is the domain decision of each step.
 *
 * @module
 */

import { Flow, withStepQueues } from "@sluice/sluice";
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

/** Attempts of one alert delivery, including the first. */
export const DELIVERY_ATTEMPTS = 4;

/**
 * Classifies a new thread, then alerts Slack about an urgent one. `deliver_slack` runs only when
 * `classify` said `urgent: true`; a Slack 429 retries after Slack's `Retry-After`, anything else
 * after the exponential backoff, and the last failed attempt marks the thread `failed`.
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
        maxAttempts: DELIVERY_ATTEMPTS,
        timeout: 3,
      },
      async (_deps, ctx) => {
        const { threadId } = ctx.flowInput;
        const result = await attemptDelivery(
          ctx.sql,
          slackFromEnv(ctx.env),
          threadId,
          ctx.signal,
        );
        if (result.kind === "sent" || result.kind === "already_sent") {
          return { slackTs: result.ts };
        }
        if (result.kind === "already_failed") return { slackTs: null };
        const reason = failureReason(result);
        if (ctx.attempt >= DELIVERY_ATTEMPTS) {
          await ctx.sql.begin((tx) => recordDeliveryFailed(tx, threadId, reason));
        }
        if (result.kind === "rate_limited") {
          throw new RetryAfterError(result.retryAfterSeconds, {
            cause: new Error(reason),
          });
        }
        throw new Error(reason);
      },
    ),
);
