// Several workers, slots and slow tasks.
import assert from "node:assert/strict";
import { Flow } from "../../src/dsl/flow.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { freshDatabase } from "../_db.ts";
import { latch, testWorker, waitUntil } from "./_helpers.ts";
import { scaled } from "../_support.ts";

Deno.test("two workers on one queue split 200 tasks and run each exactly once", async () => {
  await using db = await freshDatabase();
  const calls = new Map<string, number>();
  // Every task waits until both workers have claimed one: a worker holds at most maxConcurrent
  // (10) tasks, so the first worker's slots fill and the rest are left for the second. If the
  // second worker never claims, this never opens and the run does not finish.
  const bothClaimed = latch();
  const flow = new Flow<{ i: number }>({ slug: "shared" })
    .step({ slug: "work" }, async (input, ctx) => {
      const key = `${ctx.runId}/${ctx.taskIndex}`;
      calls.set(key, (calls.get(key) ?? 0) + 1);
      await bothClaimed.promise;
      await new Promise((resolve) => setTimeout(resolve, input.i % 5));
      return input.i;
    });
  await using a = await testWorker(flow, db);
  await using b = await testWorker(flow, db);

  await db.sql`
    select sluice.start_flow('shared', jsonb_build_object('i', i)) from generate_series(1, 200) i`;
  await waitUntil(async () => {
    const [{ workers }] = await db.sql`
      select count(distinct last_worker_id)::int as workers from sluice.step_tasks
      where last_worker_id is not null`;
    return workers === 2;
  }, "both workers to have claimed a task");
  bothClaimed.resolve();
  await waitUntil(
    async () => {
      const [{ done }] = await db.sql`
      select count(*)::int as done from sluice.runs where status = 'completed'`;
      return done === 200;
    },
    "200 completed runs",
    30_000,
  );

  assert.equal(calls.size, 200);
  assert.deepEqual([...new Set(calls.values())], [1]);
  const [tasks] = await db.sql`
    select count(*)::int as n, max(attempts_count) as max_attempts from sluice.step_tasks`;
  assert.deepEqual({ ...tasks }, { n: 200, max_attempts: 1 });
  const perWorker = await db.sql`
    select last_worker_id as worker, count(*)::int as n from sluice.step_tasks group by 1`;
  assert.deepEqual(
    perWorker.map((row) => row.worker).sort(),
    [a.workerId, b.workerId].sort(),
    "each worker ran some of the tasks",
  );
  const [{ archived }] = await db.sql`select count(*)::int as archived from pgmq.a_shared`;
  assert.equal(archived, 200);
});

Deno.test("a slow task does not hold up the tasks read after it (no per-batch barrier)", async () => {
  await using db = await freshDatabase();
  const slowStarted = latch();
  const releaseSlow = latch();
  const flow = new Flow<{ slow: boolean }>({ slug: "mixed" })
    .step({ slug: "work" }, async (input) => {
      if (input.slow) {
        slowStarted.resolve();
        await releaseSlow.promise;
      }
      return input.slow ? "slow" : "fast";
    });
  await using _worker = await testWorker(flow, db, { maxConcurrent: 2, batchSize: 2 });

  const slow = await startFlow(db.sql, flow, { slow: true });
  await slowStarted.promise;
  const fast = [];
  for (let i = 0; i < 10; i++) fast.push(await startFlow(db.sql, flow, { slow: false }));
  // With one slot taken by the slow task, the ten fast runs go through the other slot.
  for (const runId of fast) {
    assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000), flow }), {
      work: "fast",
    });
  }
  const [{ status }] = await db.sql`select status from sluice.runs where run_id = ${slow}`;
  assert.equal(status, "started");
  releaseSlow.resolve();
  assert.deepEqual(await waitForRun(db.sql, slow, { timeoutMs: scaled(10_000), flow }), {
    work: "slow",
  });
});

Deno.test("a worker never runs more than maxConcurrent tasks at once", async () => {
  await using db = await freshDatabase();
  const MAX = 3;
  // Every task is held until the test releases it, so the tasks a worker runs overlap for certain:
  // a worker that claimed more than its slots would be running all of them at once.
  const held: (() => void)[] = [];
  let running = 0;
  let peak = 0;
  const flow = new Flow<number[]>({ slug: "bounded" })
    .map({ slug: "work" }, async (n) => {
      running++;
      peak = Math.max(peak, running);
      await new Promise<void>((resolve) => held.push(resolve));
      running--;
      return n;
    });
  await using _worker = await testWorker(flow, db, { maxConcurrent: MAX });
  // One transaction queues all 30 tasks: every read of the worker finds more than its free slots.
  const runId = await startFlow(db.sql, flow, Array.from({ length: 30 }, (_, i) => i));

  const claimed = async () => {
    const [{ n }] = await db.sql`
      select count(*)::int as n from sluice.step_tasks where status = 'started'`;
    return n;
  };
  for (let released = 0; released < 30; released++) {
    // Settled: every task the database shows claimed is running here (a released task's
    // completion has landed), and the free slots are filled as far as tasks remain. A claim
    // beyond the slots commits in the same transaction as the rest of its batch.
    const full = Math.min(MAX, 30 - released);
    await waitUntil(
      // `running` is read after the database answered: a release's decrement has run by then.
      async () => {
        const n = await claimed();
        return n === running && running >= full;
      },
      `${full} tasks claimed and running after ${released} released`,
    );
    assert.equal(
      running,
      full,
      `${running} tasks running after ${released} released, ${full} expected`,
    );
    held.shift()!();
  }
  const output = await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000), flow });
  assert.equal(output.work.length, 30);
  assert.equal(peak, MAX);
});
