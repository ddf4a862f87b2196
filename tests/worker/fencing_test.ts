// A worker that lost its task to stalled recovery reports late: its report is stale, logged as a
// warning, and changes nothing; the attempt that is live now finishes the run.
import assert from "node:assert/strict";
import { Flow } from "../../src/dsl/flow.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { freshDatabase } from "../_db.ts";
import { latch, testWorker, waitUntil } from "./_helpers.ts";
import { scaled } from "../_support.ts";

for (const late of ["failure", "completion"] as const) {
  Deno.test(`a late ${late} of an attempt taken over by another worker is stale: logged at warn, the live attempt finishes the run`, async () => {
    await using db = await freshDatabase();
    const firstStarted = latch();
    const releaseFirst = latch();
    const secondStarted = latch();
    const releaseSecond = latch();
    const flow = new Flow({ slug: `fenced_${late}`, maxAttempts: 2, timeout: 60 })
      .step({ slug: "work" }, async (_input, ctx) => {
        if (ctx.attempt === 1) {
          firstStarted.resolve();
          await releaseFirst.promise;
          if (late === "failure") throw new Error("attempt 1 failed late");
          return "attempt 1";
        }
        secondStarted.resolve();
        await releaseSecond.promise;
        return "attempt 2";
      });
    // A runs one task at a time, so attempt 2 goes to B.
    await using workerA = await testWorker(flow, db, { maxConcurrent: 1 });
    const runId = await startFlow(db.sql, flow, {});
    await firstStarted.promise;
    await using workerB = await testWorker(flow, db);

    // A looks frozen past the stall window: the heartbeats' recovery requeues attempt 1.
    await db.sql`update sluice.step_tasks set started_at = now() - interval '5 minutes'
      where run_id = ${runId}`;
    await secondStarted.promise;
    const [live] = await db.sql`
      select attempts_count, last_worker_id from sluice.step_tasks where run_id = ${runId}`;
    assert.deepEqual({ ...live }, { attempts_count: 2, last_worker_id: workerB.workerId });

    releaseFirst.resolve();
    const warning = await waitUntil(
      () => workerA.logs.find("warn", "stale report")[0],
      "worker A to log its stale report",
    );
    assert.deepEqual(
      {
        run_id: warning.fields.run_id,
        step_slug: warning.fields.step_slug,
        task_index: warning.fields.task_index,
        attempt: warning.fields.attempt,
      },
      { run_id: runId, step_slug: "work", task_index: 0, attempt: 1 },
    );
    const [after] = await db.sql`
      select t.status, t.attempts_count, t.last_worker_id, r.status as run_status
      from sluice.step_tasks t join sluice.runs r using (run_id) where t.run_id = ${runId}`;
    assert.deepEqual({ ...after }, {
      status: "started",
      attempts_count: 2,
      last_worker_id: workerB.workerId,
      run_status: "started",
    });

    releaseSecond.resolve();
    assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000), flow }), {
      work: "attempt 2",
    });
  });
}
