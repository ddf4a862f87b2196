import assert from "node:assert/strict";
import { waitForRun } from "../../../mod.ts";
import { assertDomainOutcomes, countStatuses, VERSIONS, withScenario } from "./_scenario.ts";

const OUTAGE = { title: "Login outage", body: "Nobody can log in." };

for (const version of VERSIONS) {
  Deno.test(`community threads (${version}): retry — 429 waits Retry-After, 500 retries, 4 × 500 fails the thread`, async () => {
    await withScenario(version, async ({ app, slack, sql }) => {
      await app.startWorker("classify");
      await app.startWorker("deliver_slack");
      // Thread ids are 1, 2, 3 in a fresh database: script Slack before they arrive.
      const [limited, flaky, broken] = [1, 2, 3];
      slack.script(limited, { kind: "rate_limited", retryAfterSeconds: 2 });
      slack.script(flaky, { kind: "server_error" });
      slack.script(broken, ...Array(4).fill({ kind: "server_error" }));
      const ids = await app.submit([OUTAGE, OUTAGE, OUTAGE]);
      assert.deepEqual(ids, [limited, flaky, broken]);
      await app.waitForTerminal(ids);

      const outcomes = await app.outcomes();
      assert.deepEqual(countStatuses(outcomes), { alerted: 2, failed: 1 });
      assertDomainOutcomes(outcomes, slack);
      const posts = (id: number) => slack.requests.filter((r) => r.threadId === id);
      assert.deepEqual(posts(limited).map((r) => r.behaviour), [
        "rate_limited",
        "ok",
      ]);
      const waited = posts(limited)[1].receivedAt -
        posts(limited)[0].receivedAt;
      assert.ok(
        waited >= 1500,
        `the retry after a 429 with Retry-After: 2 came after ${waited} ms`,
      );
      assert.deepEqual(posts(flaky).map((r) => r.behaviour), [
        "server_error",
        "ok",
      ]);
      assert.equal(
        posts(broken).length,
        4,
        "the broken thread was posted once per attempt",
      );
      assert.equal(outcomes.get(broken)!.postsTried, 4);

      if (version === "baseline") {
        const letters = await sql<
          { message: { thread_id: number; attempts: number } }[]
        >`
          select message from pgmq.q_deliver_slack_alerts_dlq
        `;
        assert.deepEqual(
          letters.map((l) => [l.message.thread_id, l.message.attempts]),
          [[broken, 4]],
        );
      } else {
        // The exhausted delivery was skipped and mark_failed gave up on the thread: every run
        // completes, and the broken thread's run output says why its thread failed.
        // A thread is terminal once its last domain write commits; its run finishes after it.
        for (const { run_id } of await sql<{ run_id: string }[]>`select run_id from sluice.runs`) {
          await waitForRun(sql, run_id, { timeoutMs: 30_000, listen: false });
        }
        const runs = await sql<{ thread_id: number; status: string; output: unknown }[]>`
          select (input->>'threadId')::int as thread_id, status, output from sluice.runs order by 1
        `;
        const [delivery] = await sql<{ last_error: string }[]>`
          select last_error from public.deliveries where thread_id = ${broken}
        `;
        assert.match(delivery.last_error, /Slack answered HTTP 500: internal_error/);
        assert.deepEqual(runs.map((r) => [r.thread_id, r.status, r.output]), [
          [limited, "completed", {}],
          [flaky, "completed", {}],
          [broken, "completed", { mark_failed: { reason: delivery.last_error } }],
        ]);
      }
    });
  });
}
