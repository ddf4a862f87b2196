import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import { compileFlow, registerWorker, startFlow } from "./_fixtures.ts";

Deno.test("route_coverage flags a route without a live worker and counts its queued tasks", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "cov",
    queueMode: "step",
    steps: [{ slug: "a" }, { slug: "b" }],
  });
  await startFlow(db.sql, "cov", {});
  const worker = crypto.randomUUID();
  await db.sql`select sluice.track_worker_function('cov_a')`;
  await db.sql`select sluice.register_worker(${worker}, 'cov_a', 'cov__a', 'cov', 'a')`;
  const rows = await db.sql`
    select step_slug, queue_name, live_workers, queued_tasks, missing_worker
    from sluice.route_coverage where flow_slug = 'cov' order by step_index
  `;
  assert.deepEqual(rows.map((r) => ({ ...r })), [
    {
      step_slug: "a",
      queue_name: "cov__a",
      live_workers: 1,
      queued_tasks: 1,
      missing_worker: false,
    },
    {
      step_slug: "b",
      queue_name: "cov__b",
      live_workers: 0,
      queued_tasks: 1,
      missing_worker: true,
    },
  ]);

  await db.sql`update sluice.workers set last_heartbeat_at = now() - interval '1 minute'`;
  const [stale] = await db
    .sql`select missing_worker from sluice.route_coverage where step_slug = 'a'`;
  assert.equal(stale.missing_worker, true, "a stale heartbeat does not count");
});

Deno.test("queue_health and worker_function_status report depth, live workers and pauses", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "health", steps: [{ slug: "a" }] });
  await startFlow(db.sql, "health", {});
  await startFlow(db.sql, "health", {});
  await registerWorker(db.sql, "health", "health", "health_fn");
  await db.sql`update sluice.worker_functions set restart_paused_at = now(), pause_reason = 'test'`;
  const [queue] = await db.sql`select queue_length::int, live_workers from sluice.queue_health`;
  assert.deepEqual({ ...queue }, { queue_length: 2, live_workers: 1 });
  const [fn] = await db
    .sql`select restart_paused, pause_reason, live_workers from sluice.worker_function_status`;
  assert.deepEqual({ ...fn }, { restart_paused: true, pause_reason: "test", live_workers: 1 });
});
