import assert from "node:assert/strict";
import { makeThreads } from "../../../examples/community_threads/dev/harness.ts";
import { assertDomainOutcomes, countStatuses, VERSIONS, withScenario } from "./_scenario.ts";

for (const version of VERSIONS) {
  Deno.test(`community threads (${version}): ambiguity — Slack accepted, the answer was lost: posted twice`, async () => {
    await withScenario(version, async ({ app, slack }) => {
      await app.startWorker("classify");
      await app.startWorker("deliver_slack");
      // Thread 1 is urgent (makeThreads makes every other one urgent, starting with the first).
      slack.script(1, { kind: "accept_then_hang" });
      const ids = await app.submit(makeThreads(4));
      await app.waitForTerminal(ids);

      const outcomes = await app.outcomes();
      assert.deepEqual(countStatuses(outcomes), { alerted: 2, ignored: 2 });
      // Documented: neither version can tell the lost answer from a lost post; both post again,
      // so the channel shows the alert twice. The stored ts is the second post's.
      assertDomainOutcomes(outcomes, slack, new Map([[1, 2]]));
      const posts = slack.requests.filter((r) => r.threadId === 1);
      assert.deepEqual(posts.map((r) => r.behaviour), [
        "accept_then_hang",
        "ok",
      ]);
      assert.equal(outcomes.get(1)!.slackTs, posts[1].ts);
      assert.equal(outcomes.get(1)!.postsTried, 2);
    });
  });
}
