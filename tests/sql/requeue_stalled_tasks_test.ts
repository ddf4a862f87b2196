import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import {
  compileFlow,
  liveMessages,
  read,
  readAndClaim,
  registerWorker,
  run,
  type Sql,
  startFlow,
  taskStatuses,
} from "./_fixtures.ts";

async function backdate(sql: Sql, runId: string, seconds: number) {
  await sql`
    update sluice.step_tasks set started_at = now() - make_interval(secs => ${seconds})
    where run_id = ${runId} and status = 'started'
  `;
}

async function requeue(sql: Sql): Promise<number> {
  const [row] = await sql`select sluice.requeue_stalled_tasks() as n`;
  return row.n;
}

Deno.test("regression: stalled recovery uses the effective step timeout, not the flow timeout", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "stall", timeout: 60, steps: [{ slug: "a", timeout: 5 }] });
  const runId = await startFlow(db.sql, "stall", {});
  const worker = await registerWorker(db.sql, "stall", "stall");
  await readAndClaim(db.sql, "stall", worker, "stall");

  await backdate(db.sql, runId, 34);
  assert.equal(await requeue(db.sql), 0, "34 s < 5 s + 30 s: not stalled yet");
  await backdate(db.sql, runId, 36);
  assert.equal(await requeue(db.sql), 1, "36 s > 5 s + 30 s: stalled (not after 90 s)");

  assert.deepEqual(await taskStatuses(db.sql, runId), { "a:0": "queued" });
  const messages = await read(db.sql, "stall");
  assert.equal(messages.length, 1, "the message is visible again at once");
  const [task] = await db
    .sql`select requeued_count, attempts_count from sluice.step_tasks where run_id = ${runId}`;
  assert.deepEqual({ ...task }, { requeued_count: 1, attempts_count: 1 });
});

/** Makes the task's message visible, claims it, and backdates it past the stall window. */
async function claimAndStall(sql: Sql, flow: string, worker: string, runId: string) {
  await sql`update ${sql(`pgmq.q_${flow}`)} set vt = clock_timestamp()`;
  const tasks = await readAndClaim(sql, flow, worker, flow);
  await backdate(sql, runId, 40);
  return tasks;
}

Deno.test("a stall uses up its attempt: a stalled last attempt exhausts the task, says it stalled, and fails the run", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "stuck", maxAttempts: 3, steps: [{ slug: "a", timeout: 1 }] });
  const runId = await startFlow(db.sql, "stuck", {});
  const worker = await registerWorker(db.sql, "stuck", "stuck");
  for (const attempt of [1, 2]) {
    const [task] = await claimAndStall(db.sql, "stuck", worker, runId);
    assert.equal(task.attempt, attempt);
    assert.equal(await requeue(db.sql), 1);
    assert.deepEqual(await taskStatuses(db.sql, runId), { "a:0": "queued" });
  }
  const [last] = await claimAndStall(db.sql, "stuck", worker, runId);
  assert.equal(last.attempt, 3);
  assert.equal(await requeue(db.sql), 1);

  const [task] = await db.sql`
    select status, attempts_count, permanently_stalled_at, error_message
    from sluice.step_tasks where run_id = ${runId}`;
  assert.equal(task.status, "failed", "no fourth attempt with maxAttempts 3");
  assert.equal(task.attempts_count, 3);
  assert.ok(task.permanently_stalled_at instanceof Date);
  assert.match(
    task.error_message,
    /^stalled: no report of attempt 3 within .*, the last of 3 attempts$/,
  );
  const row = await run(db.sql, runId);
  assert.equal(row.status, "failed");
  assert.match(row.error_message, /step "a" task 0 failed: stalled/);
  assert.equal(await liveMessages(db.sql, runId), 0);
});

Deno.test("a stalled last attempt applies the step's whenExhausted 'skip': the step is skipped and the run goes on", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "stallskip",
    steps: [{ slug: "a", timeout: 1, maxAttempts: 1, whenExhausted: "skip" }, { slug: "b" }],
  });
  const runId = await startFlow(db.sql, "stallskip", {});
  const worker = await registerWorker(db.sql, "stallskip", "stallskip");
  const claimed = await readAndClaim(db.sql, "stallskip", worker, "stallskip");
  assert.equal(claimed.length, 2);
  await db.sql`
    update sluice.step_tasks set started_at = now() - interval '40 seconds'
    where run_id = ${runId} and step_slug = 'a'`;
  assert.equal(await requeue(db.sql), 1);

  const [step] = await db.sql`
    select status, skip_reason, error_message from sluice.step_states
    where run_id = ${runId} and step_slug = 'a'`;
  assert.deepEqual({ ...step }, {
    status: "skipped",
    skip_reason: "retries_exhausted",
    error_message: step.error_message,
  });
  assert.match(step.error_message, /^stalled: no report of attempt 1 within/);
  assert.equal((await run(db.sql, runId)).status, "started", "step b still runs");
  assert.deepEqual(await taskStatuses(db.sql, runId), { "a:0": "failed", "b:0": "started" });
});

Deno.test("requeue_stalled_tasks() skips a run whose lock another transaction holds", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "busy", steps: [{ slug: "a", timeout: 1 }] });
  const runId = await startFlow(db.sql, "busy", {});
  const worker = await registerWorker(db.sql, "busy", "busy");
  await readAndClaim(db.sql, "busy", worker, "busy");
  await backdate(db.sql, runId, 40);
  const holder = db.connect(1);
  await holder.begin(async (tx) => {
    await tx`select 1 from sluice.runs where run_id = ${runId} for update`;
    assert.equal(await requeue(db.sql), 0, "the locked run is left for the next call");
  });
  assert.equal(await requeue(db.sql), 1);
});
