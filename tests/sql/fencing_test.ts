// Fenced reports: only the live attempt of a task (its attempt number and claiming worker, as the
// claim handed them out) may complete or fail it; any other report is 'stale' and changes nothing.
import assert from "node:assert/strict";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import {
  compile,
  compileFlow,
  completeTask,
  definition,
  failTask,
  json,
  readAndClaim,
  registerWorker,
  run,
  type Sql,
  startFlow,
  startTasks,
  supportedPairs,
} from "./_fixtures.ts";

/** The task row and its message's visibility, to prove a stale report changed neither. */
async function snapshot(sql: Sql, runId: string) {
  const [row] = await sql`
    select t.status, t.attempts_count, t.last_worker_id, t.error_message, t.output,
      q.vt, q.read_ct
    from sluice.step_tasks t left join pgmq.q_fenced q on q.msg_id = t.message_id
    where t.run_id = ${runId}`;
  return { ...row };
}

/** Worker A claims attempt 1, recovery requeues it as stalled, worker B claims attempt 2. */
async function takenOver(db: TestDatabase) {
  await compileFlow(db.sql, {
    slug: "fenced",
    maxAttempts: 2,
    steps: [{ slug: "a", timeout: 1 }],
  });
  const runId = await startFlow(db.sql, "fenced", {});
  const workerA = await registerWorker(db.sql, "fenced", "fenced", "fenced_a");
  const workerB = await registerWorker(db.sql, "fenced", "fenced", "fenced_b");
  const [first] = await readAndClaim(db.sql, "fenced", workerA, "fenced");
  assert.deepEqual([first.attempt, first.worker_id], [1, workerA]);
  await db.sql`
    update sluice.step_tasks set started_at = now() - interval '40 seconds'
    where run_id = ${runId}`;
  const [{ n }] = await db.sql`select sluice.requeue_stalled_tasks() as n`;
  assert.equal(n, 1);
  const [second] = await readAndClaim(db.sql, "fenced", workerB, "fenced");
  assert.deepEqual([second.attempt, second.worker_id], [2, workerB]);
  return { runId, first, second };
}

Deno.test("fail_task() of an attempt that was taken over is stale: the live attempt keeps running and can finish the run", async () => {
  await using db = await freshDatabase();
  const { runId, first, second } = await takenOver(db);
  const before = await snapshot(db.sql, runId);

  assert.equal(await failTask(db.sql, first, "late failure of attempt 1"), "stale");
  assert.deepEqual(
    await snapshot(db.sql, runId),
    before,
    "neither the task nor its message changed",
  );
  assert.equal((await run(db.sql, runId)).status, "started", "the run did not fail");

  assert.equal(await completeTask(db.sql, second, "from B"), "completed");
  const done = await run(db.sql, runId);
  assert.equal(done.status, "completed");
  assert.deepEqual(done.output, { a: "from B" });
});

Deno.test("complete_task() of an attempt that was taken over is stale: the live attempt's result is the one kept", async () => {
  await using db = await freshDatabase();
  const { runId, first, second } = await takenOver(db);
  const before = await snapshot(db.sql, runId);

  assert.equal(await completeTask(db.sql, first, "from A"), "stale");
  assert.deepEqual(
    await snapshot(db.sql, runId),
    before,
    "neither the task nor its message changed",
  );

  assert.equal(await failTask(db.sql, second, "B failed"), "failed", "attempt 2 of 2 is live");
  assert.equal((await run(db.sql, runId)).status, "failed");
});

Deno.test("a report with the live attempt number but another worker's id is stale", async () => {
  await using db = await freshDatabase();
  const { runId, first, second } = await takenOver(db);
  const before = await snapshot(db.sql, runId);
  const forged = { ...second, worker_id: first.worker_id };
  assert.equal(await completeTask(db.sql, forged, "forged"), "stale");
  assert.equal(await failTask(db.sql, forged, "forged"), "stale");
  assert.deepEqual(await snapshot(db.sql, runId), before);
});

Deno.test("complete_tasks() applies the live results of a batch and returns the stale ones", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "fenced",
    steps: [{ slug: "each", type: "map", timeout: 1 }],
  });
  const runId = await startFlow(db.sql, "fenced", [0, 1]);
  const worker = await registerWorker(db.sql, "fenced", "fenced");
  const tasks = await readAndClaim(db.sql, "fenced", worker, "fenced");
  assert.equal(tasks.length, 2);
  const [live, old] = tasks;
  const batch = [
    { ...live, output: "live" },
    { ...old, attempt: old.attempt + 1, output: "stale" },
  ];
  const [{ outcome }] = await db.sql`
    select sluice.complete_tasks(${json(db.sql, batch)}::jsonb) as outcome`;
  assert.deepEqual(outcome, {
    completed: 1,
    stale: [{
      run_id: runId,
      step_slug: old.step_slug,
      task_index: old.task_index,
      attempt: old.attempt + 1,
    }],
    runs_completed: [],
  });
  const rows = await db.sql`
    select task_index, status from sluice.step_tasks where run_id = ${runId} order by task_index`;
  assert.deepEqual(
    rows.map((r) => r.status),
    live.task_index === 0 ? ["completed", "started"] : ["started", "completed"],
  );
});

Deno.test("a worker registered for an older compile is fenced: its reports are stale, start_tasks claims nothing, sets no pause and leaves the messages visible", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "refenced", steps: [{ slug: "a" }] });
  const oldRun = await startFlow(db.sql, "refenced", {});
  const worker = await registerWorker(db.sql, "refenced", "refenced");
  const [held] = await readAndClaim(db.sql, "refenced", worker, "refenced");
  const supported = await supportedPairs(db.sql, "refenced");

  // Its heartbeat expired (a breakpoint), so the development recompile does not wait for it; the
  // run is cancelled, as a recompile never deletes a run in flight.
  await db.sql`update sluice.workers set last_heartbeat_at = now() - interval '1 minute'`;
  await db.sql`select sluice.cancel_run(${oldRun}, 'reshaping')`;
  const recompiled = await compile(
    db.sql,
    definition({ slug: "refenced", steps: [{ slug: "a" }, { slug: "b", deps: ["a"] }] }),
    "development",
  );
  assert.equal(recompiled.outcome, "recompiled");

  // Its held task went with the old definition: stale, not "no such task".
  assert.equal(held.run_id, oldRun);
  assert.equal(await completeTask(db.sql, held, "old"), "stale");
  assert.equal(await failTask(db.sql, held, "old"), "stale");

  const newRun = await startFlow(db.sql, "refenced", {});
  const messages = await db.sql<{ msg_id: string }[]>`
    select msg_id from pgmq.read('refenced', 30, 10)`;
  const claim = await startTasks(
    db.sql,
    "refenced",
    messages.map((m) => m.msg_id),
    worker,
    supported,
  );
  assert.deepEqual(claim, {
    outcome: "fenced",
    flow_slug: "refenced",
    tasks: [],
    duplicates: [],
    archived: [],
    fatal: [],
  });
  const [task] = await db.sql`
    select status, attempts_count, last_worker_id from sluice.step_tasks where run_id = ${newRun}`;
  assert.deepEqual({ ...task }, { status: "queued", attempts_count: 0, last_worker_id: null });
  const [{ visible }] = await db.sql`
    select count(*)::int as visible from pgmq.q_refenced where vt <= clock_timestamp()`;
  assert.equal(visible, 1, "the fenced claim made its batch visible again");
  const [{ paused }] = await db.sql`
    select count(*)::int as paused from sluice.worker_functions where restart_paused_at is not null`;
  assert.equal(paused, 0);

  const [{ fenced }] = await db.sql`select sluice.worker_fenced(${worker}) as fenced`;
  assert.equal(fenced, true);

  // A worker registered for the new compile claims it.
  const fresh = await registerWorker(db.sql, "refenced", "refenced", "refenced_new");
  const [claimed] = await readAndClaim(db.sql, "refenced", fresh, "refenced");
  assert.deepEqual([claimed.run_id, claimed.step_slug, claimed.attempt], [newRun, "a", 1]);
});

Deno.test("fail_task() of an older attempt by the same worker, which claimed the task again after a stall, is stale: attempt 2 keeps running", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "reclaimed",
    maxAttempts: 2,
    steps: [{ slug: "a", timeout: 1 }],
  });
  const runId = await startFlow(db.sql, "reclaimed", {});
  const worker = await registerWorker(db.sql, "reclaimed", "reclaimed");
  const [first] = await readAndClaim(db.sql, "reclaimed", worker, "reclaimed");
  await db.sql`
    update sluice.step_tasks set started_at = now() - interval '40 seconds'
    where run_id = ${runId}`;
  const [{ n }] = await db.sql`select sluice.requeue_stalled_tasks() as n`;
  assert.equal(n, 1);
  const [second] = await readAndClaim(db.sql, "reclaimed", worker, "reclaimed");
  assert.deepEqual([second.attempt, second.worker_id], [2, worker], "the same worker, attempt 2");

  // Only the attempt number tells the two apart: the report of attempt 1 changes nothing.
  assert.equal(await failTask(db.sql, first, "late failure of attempt 1"), "stale");
  const [task] = await db.sql`
    select status, attempts_count from sluice.step_tasks where run_id = ${runId}`;
  assert.deepEqual({ ...task }, { status: "started", attempts_count: 2 });
  assert.equal((await run(db.sql, runId)).status, "started", "the run did not fail");
  assert.equal(await completeTask(db.sql, second, "attempt 2"), "completed");
  assert.deepEqual((await run(db.sql, runId)).output, { a: "attempt 2" });
});
