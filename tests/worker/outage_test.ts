// Database connections lost under a running worker.
import assert from "node:assert/strict";
import { Flow } from "../../src/dsl/flow.ts";
import { freshDatabase } from "../_db.ts";
import { testWorker, waitUntil } from "./_helpers.ts";

Deno.test("a worker whose connections are terminated again and again loses no result", async () => {
  await using db = await freshDatabase();
  const calls = new Map<string, number>();
  const flow = new Flow<{ n: number }>({ slug: "outage", timeout: 5 })
    .step({ slug: "a" }, async (input, ctx) => {
      calls.set(`${ctx.runId}/a`, (calls.get(`${ctx.runId}/a`) ?? 0) + 1);
      await new Promise((resolve) => setTimeout(resolve, 5));
      return input.n;
    })
    .step({ slug: "b", dependsOn: ["a"] }, async (deps) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return deps.a * 2;
    })
    .step({ slug: "c", dependsOn: ["b"] }, (deps) => deps.b + 1);
  // Only notifications can wake it: a LISTEN connection that is not re-established shows as a
  // hang, not as a slow pass.
  await using worker = await testWorker(flow, db, { maxConcurrent: 5, pollIntervalMs: 60_000 });

  await db.sql`
    select sluice.start_flow('outage', jsonb_build_object('n', i)) from generate_series(1, 40) i`;
  let terminated = 0;
  // Rounds until 12 connections were cut, each once the worker has reopened one (a condition, not
  // a pause: however slow the machine, every round cuts live connections).
  while (terminated < 12) {
    terminated += await waitUntil(async () => {
      const [{ n }] = await db.sql`
        select count(pg_terminate_backend(pid))::int as n from pg_stat_activity
        where datname = current_database() and application_name like 'sluice-worker:%'`;
      return n;
    }, `a reopened worker connection to cut (${terminated} cut so far)`);
  }

  try {
    await waitUntil(
      async () => {
        const [{ done }] = await db.sql`
        select count(*)::int as done from sluice.runs where status = 'completed'`;
        return done === 40;
      },
      "40 completed runs",
      // A cut can lose a claim's answer after the claim committed; that task comes back through
      // stall recovery (timeout 5 s + 30 s), well within the wait.
      75_000,
    );
  } catch (error) {
    // Enough to tell a lost wake-up from a lost claim.
    console.error(
      await db.sql`
      select status, attempts_count, count(*)::int from sluice.step_tasks group by 1, 2`,
    );
    console.error(
      await db.sql`select msg_id, read_ct, vt > clock_timestamp() as hidden from pgmq.q_outage`,
    );
    console.error(worker.logs.records.filter((r) => r.level !== "debug").slice(-30));
    throw error;
  }

  const outputs = await db.sql`
    select (input ->> 'n')::int as n, output from sluice.runs order by 1`;
  assert.deepEqual(outputs.map((r) => r.output), outputs.map((r) => ({ c: r.n * 2 + 1 })));
  const [tasks] = await db.sql`
    select count(*)::int as n, count(*) filter (where status = 'completed')::int as completed
    from sluice.step_tasks`;
  assert.deepEqual({ ...tasks }, { n: 120, completed: 120 });
  // At least once: a claim that committed but whose answer was lost would be rerun after stalled
  // recovery; within this test every first step ran exactly once.
  assert.deepEqual([...new Set(calls.values())], [1]);

  assert.equal(worker.status, "running");
  // Logged once per streak: warnings and recoveries alternate, however many calls failed.
  const streaks = worker.logs.records
    .filter((r) =>
      r.message.startsWith("database unavailable") || r.message === "database available again"
    )
    .map((r) => r.level);
  assert.ok(streaks.length >= 2, "an outage is logged");
  streaks.forEach((level, i) => assert.equal(level, i % 2 === 0 ? "warn" : "info", streaks.join()));
  assert.ok(streaks.length / 2 <= terminated, `${streaks.length / 2} streaks`);
  assert.deepEqual(worker.logs.find("error"), []);
  assert.deepEqual(worker.logs.find("fatal"), []);
});
