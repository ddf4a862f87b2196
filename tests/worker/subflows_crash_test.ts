// Subflows under a SIGKILLed worker (docs/subflows.md): the children live in the database, so a
// worker killed while it runs some of them loses none and starts none twice; another worker
// finishes the rest and the parent's output is in element order.
import assert from "node:assert/strict";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { freshDatabase } from "../_db.ts";
import { testWorker, waitUntil } from "./_helpers.ts";
import { subflowCrashChild, subflowCrashParent } from "./_subflow_crash_flow.ts";
import { spawnWorkerProcess } from "./_worker_process.ts";
import { scaled } from "../_support.ts";

Deno.test("a map over 50 children with their worker SIGKILLed midway: every child completes exactly once, the output in order", async () => {
  await using db = await freshDatabase();
  let runId: string;
  {
    await using worker = spawnWorkerProcess(
      new URL("./_subflow_crash_worker.ts", import.meta.url),
      [db.url],
    );
    assert.equal(await worker.nextLine(), "READY");
    runId = await startFlow(db.sql, "subflow_crash_parent", { count: 50 });
    assert.equal(await worker.nextLine(), "HANGING");
    // The 50 children started in the transaction that completed "load": all of them, at once.
    const [{ kids }] = await db.sql<{ kids: number }[]>`
      select count(*)::integer as kids from sluice.runs where parent_run_id = ${runId}`;
    assert.equal(kids, 50);
  } // SIGKILL
  // The killed worker's backends finish what they were running (a completion in flight commits or
  // not) and exit: only then is what it completed known, and its locks gone.
  await waitUntil(async () => {
    const [{ busy }] = await db.sql<{ busy: number }[]>`
      select count(*)::integer as busy from pg_stat_activity
      where datname = current_database() and pid <> pg_backend_pid() and state <> 'idle'`;
    return busy === 0;
  }, "the killed worker's backends gone");
  const before = await db.sql<{ i: number; status: string }[]>`
    select parent_task_index as i, status from sluice.runs
    where parent_run_id = ${runId} order by parent_task_index`;
  const completedBefore = before.filter((r) => r.status === "completed").map((r) => r.i);
  assert.ok(completedBefore.length < 50, "the kill came before the last child ended");
  const [{ hung }] = await db.sql<{ hung: number }[]>`
    select count(*)::integer as hung from sluice.step_tasks t
    join sluice.runs r on r.run_id = t.run_id
    where r.parent_run_id = ${runId} and t.status = 'started'`;
  assert.ok(hung > 0, "some children were running when the worker died");

  // Their tasks would be stalled after timeout (5 s) + 30 s: pretend that time has passed.
  await db.sql`
    update sluice.step_tasks t set started_at = now() - interval '1 minute'
    from sluice.runs r
    where r.run_id = t.run_id and r.parent_run_id = ${runId} and t.status = 'started'`;
  const executed: number[] = [];
  const child = subflowCrashChild((i) => {
    executed.push(i);
    return Promise.resolve(i * 10);
  });
  const parent = subflowCrashParent(child);
  await using _c = await testWorker(child, db, { maxConcurrent: 10 });
  await using _p = await testWorker(parent, db);
  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(30_000), flow: parent }), {
    collect: Array.from({ length: 50 }, (_, i) => i * 10),
  });

  const after = await db.sql<{ i: number; status: string; tasks: number }[]>`
    select r.parent_task_index as i, r.status,
      (select count(*)::integer from sluice.step_tasks t where t.run_id = r.run_id) as tasks
    from sluice.runs r where r.parent_run_id = ${runId} order by r.parent_task_index`;
  assert.deepEqual(after.map((r) => r.i), Array.from({ length: 50 }, (_, i) => i));
  assert.ok(after.every((r) => r.status === "completed" && r.tasks === 1));
  // The survivor ran exactly the children that had not completed, each once.
  assert.deepEqual(
    [...executed].sort((a, b) => a - b),
    Array.from({ length: 50 }, (_, i) => i).filter((i) => !completedBefore.includes(i)),
  );
  await waitUntil(async () => {
    const [{ live }] = await db.sql<{ live: number }[]>`
      select count(*)::integer as live from sluice.runs where status = 'started'`;
    return live === 0;
  }, "no run left started");
});
