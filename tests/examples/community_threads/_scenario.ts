/**
 * The scenario suite's fixture: a fresh database set up as the community-threads project, the
 * Slack stand-in, one version of the application, and the domain assertions every scenario ends
 * with.
 *
 * @module
 */
import assert from "node:assert/strict";
import { freshDatabase } from "../../_db.ts";
import { setupDatabase } from "../../../examples/community_threads/setup.ts";
import {
  App,
  type ThreadOutcome,
  type Version,
  type WorkerProcess,
} from "../../../examples/community_threads/dev/harness.ts";
import {
  type SlackStandIn,
  startSlackStandIn,
} from "../../../examples/community_threads/dev/slack_stand_in.ts";

/** Both versions, in the order every scenario runs them. */
export const VERSIONS: readonly Version[] = ["baseline", "sluice"];

/** What a scenario gets. */
export interface Scenario {
  readonly app: App;
  readonly slack: SlackStandIn;
  readonly sql: App["options"]["sql"];
}

/** Runs `fn` against a fresh project database, the Slack stand-in and `version`'s workers. */
export async function withScenario(
  version: Version,
  fn: (scenario: Scenario) => Promise<void>,
  env: Record<string, string> = {},
): Promise<void> {
  await using db = await freshDatabase();
  await setupDatabase(db.sql);
  await using slack = startSlackStandIn();
  await using app = new App({
    version,
    databaseUrl: db.url,
    sql: db.sql,
    slackUrl: slack.url,
    env: { SLACK_TIMEOUT_MS: "2000", ...env },
  });
  await fn({ app, slack, sql: db.sql });
}

/**
 * Waits until the `post`-th post about `threadId` reached Slack (scripted to `hold`, so it is in
 * flight) and every other thread has settled, SIGKILLs `doomed`, the delivery worker making it,
 * and starts a new delivery worker.
 *
 * Waiting for the other threads keeps the held post the only one the kill interrupts: a post
 * Slack accepted for another thread but not yet recorded would be sent again by the new worker,
 * a duplicate of the scenario's timing rather than of the version under test.
 */
export async function crashDeliveryDuringPost(
  { app, slack, sql }: Scenario,
  doomed: WorkerProcess,
  threadId: number,
  post: number,
): Promise<void> {
  await slack.waitFor(
    () => slack.requests.filter((r) => r.threadId === threadId).length >= post,
    `post ${post} of thread ${threadId} to reach Slack`,
  );
  const deadline = Date.now() + 30_000;
  for (;;) {
    const [{ open }] = await sql<{ open: number }[]>`
      select count(*)::int as open from public.threads
      where id <> ${threadId} and status not in ('alerted', 'ignored', 'failed')
    `;
    if (open === 0) break;
    if (Date.now() > deadline) {
      throw new Error(`${open} threads besides ${threadId} did not settle before the kill`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const status = await doomed.kill("SIGKILL");
  assert.equal(status.signal, "SIGKILL");
  await app.startWorker("deliver_slack");
}

/**
 * The domain invariants: every thread ended in exactly one terminal status, reached through
 * `classified`; an alerted thread's delivery is `sent` with the timestamp of a post Slack
 * accepted; Slack accepted exactly one post per alerted thread and none for the others, except
 * for the threads in `duplicates`, whose count is given.
 */
export function assertDomainOutcomes(
  outcomes: Map<number, ThreadOutcome>,
  slack: SlackStandIn,
  duplicates: ReadonlyMap<number, number> = new Map(),
): void {
  const accepted = new Map<number, string[]>();
  for (const post of slack.accepted()) {
    accepted.set(post.threadId, [
      ...(accepted.get(post.threadId) ?? []),
      post.ts!,
    ]);
  }
  for (const [id, thread] of outcomes) {
    assert.ok(
      ["alerted", "ignored", "failed"].includes(thread.status),
      `thread ${id} ended ${thread.status}`,
    );
    assert.deepEqual(
      thread.transitions,
      ["classified", thread.status],
      `thread ${id} transitions`,
    );
    const posts = accepted.get(id) ?? [];
    const expected = duplicates.get(id) ??
      (thread.status === "alerted" ? 1 : 0);
    assert.equal(
      posts.length,
      expected,
      `thread ${id} (${thread.status}): accepted posts`,
    );
    if (thread.status === "alerted") {
      assert.equal(thread.delivery, "sent", `thread ${id} delivery`);
      assert.ok(
        posts.includes(thread.slackTs!),
        `thread ${id} slack_ts ${thread.slackTs}`,
      );
    }
    if (thread.status === "ignored") {
      assert.equal(thread.delivery, null, `thread ${id} delivery`);
    }
    if (thread.status === "failed") {
      assert.equal(thread.delivery, "failed", `thread ${id} delivery`);
    }
  }
}

/** How many threads ended in each status. */
export function countStatuses(
  outcomes: Map<number, ThreadOutcome>,
): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const { status } of outcomes.values()) {
    counts[status] = (counts[status] ?? 0) + 1;
  }
  return counts;
}
