import assert from "node:assert/strict";
import { waitForRun } from "../../../mod.ts";
import {
  assertDomainOutcomes,
  countStatuses,
  type Scenario,
  VERSIONS,
  withScenario,
} from "./_scenario.ts";
import { scaled } from "../../_support.ts";

const OUTAGE = { title: "Login outage", body: "Nobody can log in." };

for (const version of VERSIONS) {
  Deno.test(`community threads (${version}): retry — 429 waits Retry-After, 500 retries, 4 × 500 fails the thread`, async () => {
    await withScenario(version, async ({ app, slack, sql }) => {
      await logDeliveryWrites(sql);
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
      // On the database clock: from the write recording the 429 to the write counting the next
      // attempt. The message is hidden for Retry-After from a set_vt that runs after the 429 was
      // recorded, so the gap is at least 2 s by construction; 5 ms of tolerance absorbs an NTP
      // slew of the server clock (at most 500 ppm, 1 ms over 2 s). The backoff, were Retry-After
      // ignored, would be 1 s.
      const [{ waited_ms: waited }] = await sql<{ waited_ms: number }[]>`
        select extract(epoch from
          (select min(at) from delivery_writes where thread_id = ${limited} and posts_tried = 2) -
          (select min(at) from delivery_writes
            where thread_id = ${limited} and last_error like 'rate limited%')
        )::float8 * 1000 as waited_ms
      `;
      assert.ok(
        waited >= 2000 - 5,
        `the retry after a 429 with Retry-After: 2 came ${waited} ms after it (database clock)`,
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
          await waitForRun(sql, run_id, { timeoutMs: scaled(30_000), listen: false });
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

/**
 * Records every write to `public.deliveries` with the server's clock_timestamp(), so that a test
 * can measure the time between two attempts on the database clock.
 */
async function logDeliveryWrites(sql: Scenario["sql"]): Promise<void> {
  await sql.unsafe(`
    create table delivery_writes (
      thread_id integer not null,
      posts_tried integer not null,
      last_error text,
      at timestamptz not null default clock_timestamp()
    );
    create function log_delivery_write() returns trigger language plpgsql as $$
    begin
      insert into delivery_writes (thread_id, posts_tried, last_error)
      values (new.thread_id, new.posts_tried, new.last_error);
      return new;
    end;
    $$;
    create trigger deliveries_log_write after insert or update on public.deliveries
    for each row execute function log_delivery_write();
  `);
}
