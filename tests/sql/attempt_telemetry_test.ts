// What the worker's telemetry reads from the claim and the completion (docs/observability.md):
// a claim names the error that ended the task's previous attempt, a stall recovery's included, and
// a completion names the runs it finished with their durations.
import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import {
  compileFlow,
  failTask,
  readAndClaim,
  registerWorker,
  type Sql,
  startFlow,
} from "./_fixtures.ts";

/** Makes the flow's messages visible and claims them as the worker. */
async function claim(sql: Sql, flow: string, worker: string) {
  await sql`update ${sql(`pgmq.q_${flow}`)} set vt = clock_timestamp()`;
  const tasks = await readAndClaim(sql, flow, worker, flow);
  assert.equal(tasks.length, 1);
  return tasks[0] as (typeof tasks)[0] & { previous_error: string | null };
}

Deno.test("a claim names the error that ended the previous attempt: none, a stall, a failure", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "again", maxAttempts: 3, steps: [{ slug: "a", timeout: 1 }] });
  const runId = await startFlow(db.sql, "again", {});
  const worker = await registerWorker(db.sql, "again", "again");

  const first = await claim(db.sql, "again", worker);
  assert.equal(first.previous_error, null);
  await db.sql`
    update sluice.step_tasks set started_at = now() - interval '40 seconds'
    where run_id = ${runId}`;
  const [{ n }] = await db.sql`select sluice.requeue_stalled_tasks() as n`;
  assert.equal(n, 1);

  const second = await claim(db.sql, "again", worker);
  assert.equal(second.attempt, 2);
  assert.match(second.previous_error ?? "", /^stalled: no report of attempt 1 within /);
  assert.equal(await failTask(db.sql, second, "Error: upstream said 503"), "retried");

  const third = await claim(db.sql, "again", worker);
  assert.equal(third.attempt, 3);
  assert.equal(third.previous_error, "Error: upstream said 503");
});

Deno.test("complete_tasks names the runs it completed with their durations, and only those", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "two",
    steps: [{ slug: "a" }, { slug: "b", deps: ["a"] }],
  });
  const worker = await registerWorker(db.sql, "two", "two");
  const runId = await startFlow(db.sql, "two", {});
  await db.sql`
    update sluice.runs set started_at = now() - interval '2.5 seconds' where run_id = ${runId}`;
  const complete = async () => {
    const task = await claim(db.sql, "two", worker);
    const results = [{
      run_id: task.run_id,
      step_slug: task.step_slug,
      task_index: task.task_index,
      attempt: task.attempt,
      worker_id: task.worker_id,
      output: task.step_slug,
    }];
    const [{ outcome }] = await db.sql`
      select sluice.complete_tasks(${db.sql.json(results)}::jsonb) as outcome`;
    return outcome as {
      completed: number;
      runs_completed: { run_id: string; flow_slug: string; seconds: number }[];
    };
  };

  const afterA = await complete();
  assert.equal(afterA.completed, 1);
  assert.deepEqual(afterA.runs_completed, [], "a released dependent finishes no run");

  const afterB = await complete();
  assert.equal(afterB.runs_completed.length, 1);
  const [finished] = afterB.runs_completed;
  assert.equal(finished.run_id, runId);
  assert.equal(finished.flow_slug, "two");
  const [row] = await db.sql`
    select extract(epoch from completed_at - started_at)::float8 as seconds
    from sluice.runs where run_id = ${runId} and status = 'completed'`;
  assert.ok(
    Math.abs(finished.seconds - row.seconds) < 1e-6,
    `${finished.seconds} vs ${row.seconds}`,
  );
  assert.ok(finished.seconds >= 2.5);
});
