/**
 * The example flows module: what `deno task gen:functions` reads (`"sluice.flows"` in deno.json).
 * Every exported `Flow` or step-queued flow becomes worker functions under `supabase/functions/`:
 *
 * - `greetUser`, a plain flow: one function, `greet-user`, whose worker runs every step from the
 *   queue `greet_user`.
 * - `threadDigest`, a step-queued flow: one function per step (`thread-digest--fetch-posts`,
 *   `thread-digest--classify`, `thread-digest--deliver`), each polling its step's private queue,
 *   so a backlog of slow classifications never delays fetching or delivery.
 *
 * @module
 */

import { Flow, withStepQueues } from "@sluice/sluice";

/** Composes a greeting and records it; every step on the flow's one queue. */
export const greetUser = new Flow<{ name: string }>({ slug: "greet_user" })
  .step({ slug: "compose" }, (input) => `Hello, ${input.name}!`)
  .step({ slug: "record", dependsOn: ["compose"] }, (deps) => ({
    greeting: deps.compose,
    length: deps.compose.length,
  }));

/** One post of a discussion thread. */
export interface Post {
  /** The post id. */
  readonly id: number;
  /** The post text. */
  readonly text: string;
}

/**
 * Builds a digest of a thread: fetches its posts, classifies each one (a map step: one task per
 * post), and delivers the digest. Each step has its own queue and its own worker function.
 */
export const threadDigest = withStepQueues(
  new Flow<{ threadId: string; posts: Post[] }>({ slug: "thread_digest", timeout: 30 })
    .array({ slug: "fetch_posts" }, (input) => input.posts)
    .map({ slug: "classify", array: "fetch_posts" }, (post) => ({
      id: post.id,
      label: post.text.includes("?") ? "question" : "comment",
    }))
    .step({ slug: "deliver", dependsOn: ["classify"] }, (deps, context) => ({
      threadId: context.flowInput.threadId,
      questions: deps.classify.filter((post) => post.label === "question").length,
      comments: deps.classify.filter((post) => post.label === "comment").length,
    })),
);
