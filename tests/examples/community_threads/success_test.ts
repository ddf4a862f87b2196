import assert from "node:assert/strict";
import { makeThreads } from "../../../examples/community_threads/dev/harness.ts";
import { assertDomainOutcomes, countStatuses, VERSIONS, withScenario } from "./_scenario.ts";

for (const version of VERSIONS) {
  Deno.test(`community threads (${version}): success — urgent threads alerted once, others ignored`, async () => {
    await withScenario(version, async ({ app, slack }) => {
      await app.startWorker("classify");
      await app.startWorker("deliver_slack");
      const ids = await app.submit(makeThreads(10));
      await app.waitForTerminal(ids);
      const outcomes = await app.outcomes();
      assert.deepEqual(countStatuses(outcomes), { alerted: 5, ignored: 5 });
      assertDomainOutcomes(outcomes, slack);
      assert.equal(
        slack.requests.length,
        5,
        "one post per urgent thread, no retries",
      );
    });
  });

  Deno.test(`community threads (${version}): concurrency — 2 workers per step, 2 intake connections`, async () => {
    await withScenario(version, async ({ app, slack }) => {
      await Promise.all([
        app.startWorkers("classify", 2),
        app.startWorkers("deliver_slack", 2),
      ]);
      const ids = await app.submit(makeThreads(60, 3), 2);
      await app.waitForTerminal(ids);
      const outcomes = await app.outcomes();
      assert.deepEqual(countStatuses(outcomes), { alerted: 20, ignored: 40 });
      assertDomainOutcomes(outcomes, slack);
      assert.equal(slack.requests.length, 20, "no post was made twice");
    }, { WORKER_CONCURRENCY: "4" });
  });
}
