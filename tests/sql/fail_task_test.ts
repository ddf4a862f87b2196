import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import {
  type ClaimedTask,
  compileFlow,
  completeTask,
  failTask,
  liveMessages,
  read,
  readAndClaim,
  registerWorker,
  run,
  type Sql,
  startFlow,
  stepStatuses,
  taskStatuses,
} from "./_fixtures.ts";

/**
 * Fails `task` and says whether its message's visibility time is exactly `delaySeconds` after a
 * moment of the call: between the server clock read just before it and just after it. Both
 * bounds are read on the database, so the check holds however slow the machine is.
 */
async function failAndCheckDelay(
  sql: Sql,
  queue: string,
  task: ClaimedTask,
  error: string,
  delaySeconds: number,
  retryDelaySeconds?: number,
): Promise<{ outcome: string; inWindow: boolean; vtAfterCall: string }> {
  const [{ before }] = await sql<{ before: string }[]>`select clock_timestamp()::text as before`;
  const outcome = await failTask(sql, task, error, retryDelaySeconds);
  const [row] = await sql.unsafe<{ in_window: boolean; vt_after_call: string }[]>(
    `select vt - make_interval(secs => $2) between $3::timestamptz and clock_timestamp()
              as in_window,
            (vt - $3::timestamptz)::text as vt_after_call
       from pgmq.q_${queue} where msg_id = $1`,
    [task.message_id, delaySeconds, before],
  );
  return { outcome, inWindow: row.in_window, vtAfterCall: row.vt_after_call };
}

Deno.test("fail_task() requeues the task and delays its own message by exponential backoff", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "retry",
    baseDelay: 3,
    maxAttempts: 5,
    steps: [{ slug: "a" }],
  });
  const runId = await startFlow(db.sql, "retry", {});
  const worker = await registerWorker(db.sql, "retry", "retry");
  const expected = [3, 6, 12, 24];
  for (const [i, delay] of expected.entries()) {
    await db.sql`update pgmq.q_retry set vt = clock_timestamp()`;
    const [task] = await readAndClaim(db.sql, "retry", worker, "retry");
    assert.equal(task.attempt, i + 1);
    const failed = await failAndCheckDelay(db.sql, "retry", task, `boom ${i}`, delay);
    assert.equal(failed.outcome, "retried");
    assert.ok(
      failed.inWindow,
      `attempt ${i + 1}: expected ${delay}s after the call, got ${failed.vtAfterCall}`,
    );
  }
  const [row] = await db
    .sql`select status, error_message from sluice.step_tasks where run_id = ${runId}`;
  assert.deepEqual({ ...row }, { status: "queued", error_message: "boom 3" });
});

Deno.test("fail_task() honours a handler-selected retry delay", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "chosen", baseDelay: 1, steps: [{ slug: "a" }] });
  await startFlow(db.sql, "chosen", {});
  const worker = await registerWorker(db.sql, "chosen", "chosen");
  const [task] = await readAndClaim(db.sql, "chosen", worker, "chosen");
  // 120.2 s rounds up to whole seconds.
  const failed = await failAndCheckDelay(db.sql, "chosen", task, "rate limited", 121, 120.2);
  assert.equal(failed.outcome, "retried");
  assert.ok(failed.inWindow, `expected 121 s after the call, got ${failed.vtAfterCall}`);
});

Deno.test("fail_task() rejects a negative, NaN, infinite or over-cap retry delay and writes nothing", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "badretry", steps: [{ slug: "a" }] });
  const runId = await startFlow(db.sql, "badretry", {});
  const worker = await registerWorker(db.sql, "badretry", "badretry");
  const [task] = await readAndClaim(db.sql, "badretry", worker, "badretry");
  const before = await db.sql`select * from sluice.step_tasks where run_id = ${runId}`;
  const [{ vt: vtBefore }] = await db.sql`select vt from pgmq.q_badretry`;
  for (const bad of ["-1", "NaN", "Infinity", "86401"]) {
    await assert.rejects(
      db.sql`select sluice.fail_task(${task.run_id}, 'a', 0, ${task.attempt}, ${task.worker_id}, 'x', ${bad}::double precision)`,
      /retry_delay_seconds must be a finite number from 0 to 86400/,
      bad,
    );
  }
  // Nothing written: the task row (status, attempts, error) and its message's visibility.
  assert.deepEqual(await db.sql`select * from sluice.step_tasks where run_id = ${runId}`, before);
  const [{ vt: vtAfter }] = await db.sql`select vt from pgmq.q_badretry`;
  assert.deepEqual(vtAfter, vtBefore);
  assert.deepEqual(await taskStatuses(db.sql, runId), { "a:0": "started" });
});

Deno.test("backoff is capped at the maximum retry delay and does not overflow at attempt 40", async () => {
  await using db = await freshDatabase();
  const rows = await db.sql`
    select a, sluice.backoff_delay_seconds(5, a) as d from unnest(array[1, 2, 15, 40, 1000]) a
  `;
  assert.deepEqual(rows.map((r) => r.d), [5, 10, 81920, 86400, 86400]);
});

Deno.test("fail_task() on the last attempt with whenExhausted 'fail' fails the run and cancels the rest", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "fatalstep",
    maxAttempts: 1,
    steps: [{ slug: "a" }, { slug: "b" }, { slug: "c", deps: ["a", "b"] }],
  });
  const runId = await startFlow(db.sql, "fatalstep", {});
  const worker = await registerWorker(db.sql, "fatalstep", "fatalstep");
  const tasks = await readAndClaim(db.sql, "fatalstep", worker, "fatalstep");
  const a = tasks.find((t) => t.step_slug === "a")!;
  const b = tasks.find((t) => t.step_slug === "b")!;
  assert.equal(await failTask(db.sql, a, "kaput"), "failed");
  const row = await run(db.sql, runId);
  assert.equal(row.status, "failed");
  assert.match(row.error_message, /step "a" task 0 failed: kaput/);
  assert.deepEqual(await stepStatuses(db.sql, runId), {
    a: "failed",
    b: "cancelled",
    c: "cancelled",
  });
  assert.deepEqual(await taskStatuses(db.sql, runId), { "a:0": "failed", "b:0": "cancelled" });
  assert.equal(await liveMessages(db.sql, runId), 0);
  assert.equal(await completeTask(db.sql, b, 1), "stale", "a late completion changes nothing");
  assert.equal(await failTask(db.sql, b, "late"), "stale");
});

Deno.test("regression: a root map whose task 0 exhausts with whenExhausted 'skip' skips started and queued siblings", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "skipmap",
    steps: [{ slug: "each", type: "map", maxAttempts: 1, whenExhausted: "skip" }],
  });
  const runId = await startFlow(db.sql, "skipmap", [1, 2, 3]);
  const worker = await registerWorker(db.sql, "skipmap", "skipmap");
  const messages = await read(db.sql, "skipmap", 2);
  const [claim] = await db.sql`
    select sluice.start_tasks('skipmap', ${`{${
    messages.map((m) => m.msg_id).join(",")
  }}`}::bigint[], ${worker},
      '[{"flow_slug":"skipmap","step_slug":"each"}]'::jsonb) as r
  `;
  const [t0] = claim.r.tasks;
  assert.deepEqual(await taskStatuses(db.sql, runId), {
    "each:0": "started",
    "each:1": "started",
    "each:2": "queued",
  });
  assert.equal(await failTask(db.sql, t0, "bad element"), "failed");

  const row = await run(db.sql, runId);
  assert.equal(row.status, "completed");
  assert.deepEqual(await stepStatuses(db.sql, runId), { each: "skipped" });
  assert.deepEqual(await taskStatuses(db.sql, runId), {
    "each:0": "failed",
    "each:1": "skipped",
    "each:2": "skipped",
  });
  assert.equal(await liveMessages(db.sql, runId), 0);
  const [live] = await db.sql`select count(*)::int as n from pgmq.q_skipmap`;
  assert.equal(live.n, 0);
});

Deno.test("whenExhausted 'skip-cascade' skips dependents and the run completes without them", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "exhaustcascade",
    steps: [
      { slug: "flaky", maxAttempts: 1, whenExhausted: "skip-cascade" },
      { slug: "after", deps: ["flaky"] },
      { slug: "solo" },
    ],
  });
  const runId = await startFlow(db.sql, "exhaustcascade", {});
  const worker = await registerWorker(db.sql, "exhaustcascade", "exhaustcascade");
  const tasks = await readAndClaim(db.sql, "exhaustcascade", worker, "exhaustcascade");
  await failTask(db.sql, tasks.find((t) => t.step_slug === "flaky")!, "nope");
  await completeTask(db.sql, tasks.find((t) => t.step_slug === "solo")!, "ok");
  assert.deepEqual(await stepStatuses(db.sql, runId), {
    flaky: "skipped",
    after: "skipped",
    solo: "completed",
  });
  const row = await run(db.sql, runId);
  assert.equal(row.status, "completed");
  assert.deepEqual(row.output, { solo: "ok" });
});

Deno.test("fail_task() names an unknown task", async () => {
  await using db = await freshDatabase();
  const runId = crypto.randomUUID();
  await assert.rejects(
    failTask(db.sql, {
      run_id: runId,
      step_slug: "a",
      task_index: 0,
      attempt: 1,
      worker_id: crypto.randomUUID(),
    }, "x"),
    new RegExp(`Cannot fail task \\(run ${runId}, step "a", index 0\\): no such task`),
  );
});
