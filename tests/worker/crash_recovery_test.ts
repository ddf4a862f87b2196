// A worker process killed mid-task: stalled recovery requeues the task, another worker completes it.
import assert from "node:assert/strict";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { freshDatabase } from "../_db.ts";
import { crashFlow } from "./_crash_flow.ts";
import { testWorker } from "./_helpers.ts";
import { spawnWorkerProcess } from "./_worker_process.ts";
import { scaled } from "../_support.ts";

Deno.test("a task of a killed worker is recovered by stalled recovery and completed by another worker", async () => {
  await using db = await freshDatabase();
  let runId: string;
  {
    await using worker = spawnWorkerProcess(new URL("./_crash_worker.ts", import.meta.url), [
      db.url,
    ]);
    assert.equal(await worker.nextLine(), "READY");
    runId = await startFlow(db.sql, "crashy", { n: 20 });
    assert.equal(await worker.nextLine(), `STARTED ${runId} 1`);
  }

  const [crashed] = await db.sql`
    select t.status, t.attempts_count, w.stopped_at
    from sluice.step_tasks t join sluice.workers w on w.worker_id = t.last_worker_id`;
  assert.deepEqual({ ...crashed }, { status: "started", attempts_count: 1, stopped_at: null });

  // The task would be stalled after timeout (5 s) + 30 s: pretend that time has passed.
  await db.sql`update sluice.step_tasks set started_at = now() - interval '1 minute'`;
  const flow = crashFlow((input) => Promise.resolve(input.n * 2));
  await using survivor = await testWorker(flow, db);

  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000), flow }), {
    work: 40,
  });
  const [task] = await db.sql`
    select attempts_count, requeued_count, last_worker_id from sluice.step_tasks`;
  assert.deepEqual({ ...task }, {
    attempts_count: 2,
    requeued_count: 1,
    last_worker_id: survivor.workerId,
  });
  assert.equal(survivor.logs.find("info", "stalled tasks recovered").length, 1);
});
