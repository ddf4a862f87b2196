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

Deno.test("a task that stalls more than 3 times fails through the normal path and the run terminates", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "stuck", steps: [{ slug: "a", timeout: 1 }] });
  const runId = await startFlow(db.sql, "stuck", {});
  const worker = await registerWorker(db.sql, "stuck", "stuck");
  for (let i = 0; i < 3; i++) {
    await db.sql`update pgmq.q_stuck set vt = clock_timestamp()`;
    assert.equal((await readAndClaim(db.sql, "stuck", worker, "stuck")).length, 1);
    await backdate(db.sql, runId, 40);
    assert.equal(await requeue(db.sql), 1);
  }
  await db.sql`update pgmq.q_stuck set vt = clock_timestamp()`;
  await readAndClaim(db.sql, "stuck", worker, "stuck");
  await backdate(db.sql, runId, 40);
  assert.equal(await requeue(db.sql), 1);

  const [task] = await db
    .sql`select status, permanently_stalled_at, error_message from sluice.step_tasks where run_id = ${runId}`;
  assert.equal(task.status, "failed");
  assert.ok(task.permanently_stalled_at instanceof Date);
  assert.match(task.error_message, /stalled 4 times/);
  assert.equal((await run(db.sql, runId)).status, "failed");
  assert.equal(await liveMessages(db.sql, runId), 0);
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
