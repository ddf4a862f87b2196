import assert from "node:assert/strict";
import { waitForRun } from "../../../mod.ts";
import { makeThreads } from "../../../examples/community_threads/dev/harness.ts";
import { communityThreads } from "../../../examples/community_threads/supabase/functions/_shared/flows.ts";
import {
  assertDomainOutcomes,
  countStatuses,
  crashDeliveryDuringPost,
  VERSIONS,
  withScenario,
} from "./_scenario.ts";
import { scaled } from "../../_support.ts";

for (const version of VERSIONS) {
  Deno.test(`community threads (${version}): stalled last attempt — delivery worker SIGKILLed during the 4th post`, async () => {
    await withScenario(version, async (scenario) => {
      const { app, slack, sql } = scenario;
      await app.startWorker("classify");
      const doomed = await app.startWorker("deliver_slack");
      // Thread 1 is urgent: three failed posts, then a 4th that hangs until its worker dies.
      slack.script(1, ...Array(3).fill({ kind: "server_error" }), { kind: "hold" });
      const ids = await app.submit(makeThreads(4));
      await crashDeliveryDuringPost(scenario, doomed, 1, 4);
      await app.waitForTerminal(ids, 90_000);

      const outcomes = await app.outcomes();
      assertDomainOutcomes(outcomes, slack);
      const posts = slack.requests.filter((r) => r.threadId === 1);
      assert.deepEqual(posts.slice(0, 4).map((r) => [r.behaviour, r.accepted]), [
        ["server_error", false],
        ["server_error", false],
        ["server_error", false],
        ["hold", false],
      ]);
      if (version === "baseline") {
        // The message reappears with read count 5, and the worker only checks the count after an
        // attempt: it posts a 5th time, beyond the domain's 4 posts.
        assert.deepEqual(countStatuses(outcomes), { alerted: 2, ignored: 2 });
        assert.equal(posts.length, 5);
        assert.equal(outcomes.get(1)!.postsTried, 5);
      } else {
        // The stall used up the last attempt; mark_failed gave up on the thread.
        assert.deepEqual(countStatuses(outcomes), { alerted: 1, failed: 1, ignored: 2 });
        assert.equal(posts.length, 4);
        assert.equal(outcomes.get(1)!.postsTried, 4);
        // The thread is failed once mark_failed's transaction commits; its run completes after.
        const [{ run_id }] = await sql<{ run_id: string }[]>`
          select run_id from sluice.runs where (input->>'threadId')::int = 1
        `;
        const output = await waitForRun(sql, run_id, {
          timeoutMs: scaled(30_000),
          listen: false,
          flow: communityThreads,
        });
        const reason = output.mark_failed?.reason ?? "";
        assert.match(reason, /^stalled: no report of attempt 4/);
        const [delivery] = await sql<{ last_error: string }[]>`
          select last_error from public.deliveries where thread_id = 1
        `;
        assert.equal(delivery.last_error, reason);
      }
    });
  });
}
