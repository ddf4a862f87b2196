import assert from "node:assert/strict";
import { makeThreads } from "../../../examples/community_threads/dev/harness.ts";
import {
  assertDomainOutcomes,
  countStatuses,
  crashDeliveryDuringPost,
  VERSIONS,
  withScenario,
} from "./_scenario.ts";

for (const version of VERSIONS) {
  Deno.test(`community threads (${version}): crash — delivery worker SIGKILLed mid-post, a restarted one delivers once`, async () => {
    await withScenario(version, async (scenario) => {
      const { app, slack, sql } = scenario;
      await app.startWorker("classify");
      const doomed = await app.startWorker("deliver_slack");
      slack.script(1, { kind: "hold" });
      const ids = await app.submit(makeThreads(6));
      await crashDeliveryDuringPost(scenario, doomed, 1, 1);
      await app.waitForTerminal(ids, 60_000);

      const outcomes = await app.outcomes();
      assert.deepEqual(countStatuses(outcomes), { alerted: 3, ignored: 3 });
      assertDomainOutcomes(outcomes, slack);
      const posts = slack.requests.filter((r) => r.threadId === 1);
      // Slack never accepted the held post: its connection died with the worker.
      assert.deepEqual(posts.map((r) => [r.behaviour, r.accepted]), [[
        "hold",
        false,
      ], ["ok", true]]);
      if (version === "sluice") {
        const [task] = await sql<{ attempts_count: number }[]>`
          select attempts_count from sluice.step_tasks t join sluice.runs r using (run_id)
          where t.step_slug = 'deliver_slack' and (r.input->>'threadId')::int = 1
        `;
        assert.equal(
          task.attempts_count,
          2,
          "the stall used up the killed attempt",
        );
      }
    });
  });
}
