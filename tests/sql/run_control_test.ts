// Run control in SQL: sluice.cancel_run / cancel_runs end runs with their reason, fence their
// running attempts and archive their messages; sluice.retry_run resumes a failed or cancelled run
// from where it stopped, continuing attempt numbers (fencing tokens never repeat).
import assert from "node:assert/strict";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { runChannel } from "../../src/events/run_event.ts";
import { waitUntil } from "../_support.ts";
import { waitUntilBlocked } from "../pgmq/_pgmq.ts";
import {
  type AttemptToken,
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

async function cancel(sql: Sql, runId: string, reason: string | null = "no longer needed") {
  const [{ result }] = await sql`select sluice.cancel_run(${runId}, ${reason}) as result`;
  return result;
}

async function retry(sql: Sql, runId: string, force = false) {
  const [{ result }] = await sql`select sluice.retry_run(${runId}, ${force}) as result`;
  return result;
}

/** Attempts per task as "step:index" -> attempts_count/attempts_base. */
async function attempts(sql: Sql, runId: string): Promise<Record<string, string>> {
  const rows = await sql`
    select step_slug, task_index, attempts_count, attempts_base from sluice.step_tasks
    where run_id = ${runId}`;
  return Object.fromEntries(
    rows.map((r) => [`${r.step_slug}:${r.task_index}`, `${r.attempts_count}/${r.attempts_base}`]),
  );
}

/** A chain `first` -> `second` on queue `slug`. */
async function chain(db: TestDatabase, slug: string, maxAttempts = 3) {
  await compileFlow(db.sql, {
    slug,
    maxAttempts,
    steps: [{ slug: "first" }, { slug: "second", deps: ["first"] }],
  });
  const workerId = await registerWorker(db.sql, slug, slug);
  return workerId;
}

/** A map `square` over the input, then `sum` of it. */
async function mapFlow(db: TestDatabase, slug: string, maxAttempts = 2) {
  await compileFlow(db.sql, {
    slug,
    maxAttempts,
    steps: [
      { slug: "square", type: "map" },
      { slug: "sum", deps: ["square"] },
    ],
  });
  return await registerWorker(db.sql, slug, slug);
}

Deno.test("cancel_run() of a queued run ends it cancelled with its reason: tasks cancelled, messages archived, dependents never start", async () => {
  await using db = await freshDatabase();
  await chain(db, "cq");
  const runId = await startFlow(db.sql, "cq", {});

  const result = await cancel(db.sql, runId, "customer withdrew");
  assert.equal(result.outcome, "cancelled");
  assert.equal(result.status, "cancelled");
  assert.equal(result.tasks, 1);
  const row = await run(db.sql, runId);
  assert.equal(row.status, "cancelled");
  assert.equal(row.cancel_reason, "customer withdrew");
  assert.equal(typeof row.cancelled_by, "string");
  assert.notEqual(row.cancelled_at, null);
  assert.deepEqual(await stepStatuses(db.sql, runId), { first: "cancelled", second: "cancelled" });
  assert.deepEqual(await taskStatuses(db.sql, runId), { "first:0": "cancelled" });
  assert.equal(await liveMessages(db.sql, runId), 0);
  const [{ archived }] = await db.sql`
    select count(*)::int as archived from pgmq.a_cq a
    join sluice.step_tasks t on t.message_id = a.msg_id where t.run_id = ${runId}`;
  assert.equal(archived, 1);
  assert.equal((await read(db.sql, "cq")).length, 0);
});

Deno.test("cancel_run() is idempotent, answers unchanged for a finished run, and raises for an unknown id", async () => {
  await using db = await freshDatabase();
  const workerId = await chain(db, "cidem");
  const runId = await startFlow(db.sql, "cidem", {});
  await cancel(db.sql, runId, "first reason");
  const again = await cancel(db.sql, runId, "second reason");
  assert.deepEqual(
    { outcome: again.outcome, status: again.status, tasks: again.tasks, reason: again.reason },
    { outcome: "unchanged", status: "cancelled", tasks: 0, reason: "first reason" },
  );
  assert.equal((await run(db.sql, runId)).cancel_reason, "first reason");

  const done = await startFlow(db.sql, "cidem", {});
  for (let i = 0; i < 2; i++) {
    for (const task of await readAndClaim(db.sql, "cidem", workerId, "cidem")) {
      await completeTask(db.sql, task, 1);
    }
  }
  assert.equal((await run(db.sql, done)).status, "completed");
  const finished = await cancel(db.sql, done);
  assert.deepEqual([finished.outcome, finished.status], ["unchanged", "completed"]);
  assert.equal((await run(db.sql, done)).status, "completed");

  const missing = crypto.randomUUID();
  await assert.rejects(cancel(db.sql, missing), (error: Error & { code?: string }) => {
    assert.equal(error.code, "P0002");
    assert.match(error.message, new RegExp(`Cannot cancel run ${missing}: no such run`));
    return true;
  });
  await assert.rejects(
    cancel(db.sql, runId, "x".repeat(1001)),
    /the reason is 1001 characters, more than the limit of 1000/,
  );
});

Deno.test("cancel_run() while a handler runs fences its attempt: both reports are stale and the heartbeat names it aborted", async () => {
  await using db = await freshDatabase();
  const workerId = await chain(db, "crun");
  const runId = await startFlow(db.sql, "crun", {});
  const [task] = await readAndClaim(db.sql, "crun", workerId, "crun");

  assert.equal((await cancel(db.sql, runId)).outcome, "cancelled");
  assert.deepEqual(await taskStatuses(db.sql, runId), { "first:0": "cancelled" });
  assert.equal(await liveMessages(db.sql, runId), 0);

  const running = [{
    run_id: task.run_id,
    step_slug: task.step_slug,
    task_index: task.task_index,
    attempt: task.attempt,
  }];
  const [{ beat }] = await db.sql`
    select sluice.heartbeat_worker(${workerId}::uuid, ${db.sql.json(running)}::jsonb) as beat`;
  assert.deepEqual(beat, {
    deprecated: false,
    aborted: [{
      ...running[0],
      task_status: "cancelled",
      run_status: "cancelled",
      cancel_reason: "no longer needed",
    }],
  });

  assert.equal(await completeTask(db.sql, task, "late"), "stale");
  assert.equal(await failTask(db.sql, task, "late"), "stale");
  assert.deepEqual(await stepStatuses(db.sql, runId), { first: "cancelled", second: "cancelled" });
  const [row] = await db.sql`select status, output from sluice.step_tasks where run_id = ${runId}`;
  assert.deepEqual({ ...row }, { status: "cancelled", output: null });
});

Deno.test("heartbeat_worker() with the worker's running attempts names none while each is live", async () => {
  await using db = await freshDatabase();
  const workerId = await chain(db, "clive");
  await startFlow(db.sql, "clive", {});
  const [task] = await readAndClaim(db.sql, "clive", workerId, "clive");
  const running = [{
    run_id: task.run_id,
    step_slug: task.step_slug,
    task_index: task.task_index,
    attempt: task.attempt,
  }];
  const [{ beat }] = await db.sql`
    select sluice.heartbeat_worker(${workerId}::uuid, ${db.sql.json(running)}::jsonb) as beat`;
  assert.deepEqual(beat, { deprecated: false, aborted: [] });
  // Another attempt number is not live (a stale in-flight entry).
  const [{ other }] = await db.sql`
    select sluice.heartbeat_worker(${workerId}::uuid,
      ${db.sql.json([{ ...running[0], attempt: 7 }])}::jsonb) as other`;
  assert.equal(other.aborted.length, 1);
  assert.equal(other.aborted[0].task_status, "started");
});

Deno.test("cancel_run() while a retry delay is pending archives the delayed message: it never comes back", async () => {
  await using db = await freshDatabase();
  const workerId = await chain(db, "cdelay");
  const runId = await startFlow(db.sql, "cdelay", {});
  const [task] = await readAndClaim(db.sql, "cdelay", workerId, "cdelay");
  assert.equal(await failTask(db.sql, task, "try later", 3600), "retried");
  assert.deepEqual(await taskStatuses(db.sql, runId), { "first:0": "queued" });
  assert.equal(await liveMessages(db.sql, runId), 1);

  assert.equal((await cancel(db.sql, runId)).tasks, 1);
  assert.deepEqual(await taskStatuses(db.sql, runId), { "first:0": "cancelled" });
  assert.equal(await liveMessages(db.sql, runId), 0);
  // Even with the delay over, nothing is there to claim.
  await db.sql`update pgmq.q_cdelay set vt = now() - interval '1 second'`;
  assert.equal((await read(db.sql, "cdelay")).length, 0);
});

Deno.test("cancel_run() during a map fan-out keeps completed elements, cancels queued and running ones and the step after", async () => {
  await using db = await freshDatabase();
  const workerId = await mapFlow(db, "cmap");
  const runId = await startFlow(db.sql, "cmap", [1, 2, 3, 4]);
  const messages = await read(db.sql, "cmap", 2);
  const [{ result }] = await db.sql`
    select sluice.start_tasks('cmap', ${`{${messages.map((m) => m.msg_id).join(",")}}`}::bigint[],
      ${workerId}, ${
    db.sql.json([{ flow_slug: "cmap", step_slug: "square" }, {
      flow_slug: "cmap",
      step_slug: "sum",
    }])
  }::jsonb) as result`;
  const [done, running] = result.tasks as AttemptToken[];
  assert.equal(await completeTask(db.sql, done, 1), "completed");

  assert.equal((await cancel(db.sql, runId, "fan-out too big")).tasks, 3);
  assert.deepEqual(await taskStatuses(db.sql, runId), {
    "square:0": "completed",
    "square:1": "cancelled",
    "square:2": "cancelled",
    "square:3": "cancelled",
  });
  assert.deepEqual(await stepStatuses(db.sql, runId), { square: "cancelled", sum: "cancelled" });
  assert.equal(await liveMessages(db.sql, runId), 0);
  assert.equal(await completeTask(db.sql, running, 4), "stale");
  assert.equal((await read(db.sql, "cmap")).length, 0);
});

Deno.test("cancel_runs() cancels a flow's started runs in bounded batches, oldest first, and leaves other flows and finished runs alone", async () => {
  await using db = await freshDatabase();
  await chain(db, "cbulk");
  await chain(db, "cother");
  const ids = [];
  for (let i = 0; i < 5; i++) ids.push(await startFlow(db.sql, "cbulk", { i }));
  await cancel(db.sql, ids[4], "already");
  const other = await startFlow(db.sql, "cother", {});

  const batches = [];
  for (;;) {
    const [{ result }] = await db.sql`
      select sluice.cancel_runs('cbulk', 'bulk stop', batch_size => 2) as result`;
    batches.push(result);
    if (!result.more) break;
  }
  assert.deepEqual(batches.map((b) => b.cancelled), [2, 2, 0]);
  assert.deepEqual(batches.flatMap((b) => b.run_ids).sort(), ids.slice(0, 4).sort());
  for (const id of ids.slice(0, 4)) {
    const row = await run(db.sql, id);
    assert.deepEqual([row.status, row.cancel_reason], ["cancelled", "bulk stop"]);
    assert.equal(await liveMessages(db.sql, id), 0);
  }
  assert.equal((await run(db.sql, ids[4])).cancel_reason, "already");
  assert.equal((await run(db.sql, other)).status, "started");

  const [{ before }] = await db.sql`
    select sluice.cancel_runs('cother', 'old ones', started_before => now() - interval '1 hour')
      as before`;
  assert.deepEqual(before, { cancelled: 0, run_ids: [], more: false });
  await assert.rejects(
    db.sql`select sluice.cancel_runs('nope', 'x')`,
    /Cannot cancel runs of flow "nope": no such flow/,
  );
  await assert.rejects(
    db.sql`select sluice.cancel_runs('cbulk', 'x', batch_size => 0)`,
    /batch_size must be from 1 to 10000, got 0/,
  );
});

/**
 * A failed map run: elements 0 and 1 completed, element 2 failed both attempts (the run fails),
 * element 3 was running (started) and is cancelled with the run.
 */
async function failedMapRun(db: TestDatabase, slug: string) {
  const workerId = await mapFlow(db, slug);
  const runId = await startFlow(db.sql, slug, [1, 2, 3, 4]);
  const tasks = await readAndClaim(db.sql, slug, workerId, slug);
  const byIndex = (i: number) => tasks.find((t) => t.task_index === i)!;
  assert.equal(await completeTask(db.sql, byIndex(0), 1), "completed");
  assert.equal(await completeTask(db.sql, byIndex(1), 4), "completed");
  assert.equal(await failTask(db.sql, byIndex(2), "api down", 0), "retried");
  const [again] = await readAndClaim(db.sql, slug, workerId, slug);
  assert.deepEqual([again.task_index, again.attempt], [2, 2]);
  assert.equal(await failTask(db.sql, again, "api still down"), "failed");
  const row = await run(db.sql, runId);
  assert.equal(row.status, "failed");
  assert.deepEqual(await taskStatuses(db.sql, runId), {
    "square:0": "completed",
    "square:1": "completed",
    "square:2": "failed",
    "square:3": "cancelled",
  });
  return { workerId, runId, element3: byIndex(3), element2: again };
}

Deno.test("retry_run() of a failed map run re-executes only the failed and cancelled elements, continuing their attempt numbers", async () => {
  await using db = await freshDatabase();
  const { workerId, runId, element3, element2 } = await failedMapRun(db, "rmap");

  const result = await retry(db.sql, runId);
  assert.deepEqual(result, {
    run_id: runId,
    outcome: "retried",
    status: "started",
    retry_count: 1,
    tasks: 2,
    steps: 2,
  });
  const row = await run(db.sql, runId);
  assert.deepEqual(
    [row.status, row.failed_at, row.error_message, row.retry_count, row.remaining_steps],
    ["started", null, null, 1, 2],
  );
  assert.equal(typeof row.retried_by, "string");
  assert.deepEqual(await stepStatuses(db.sql, runId), { square: "started", sum: "created" });
  assert.deepEqual(await attempts(db.sql, runId), {
    "square:0": "1/0",
    "square:1": "1/0",
    "square:2": "2/2",
    "square:3": "1/1",
  });
  // Late reports of the attempts before the retry are stale, now and after the next claims.
  assert.equal(await completeTask(db.sql, element3, 9), "stale");
  assert.equal(await failTask(db.sql, element2, "late"), "stale");

  const claimed = await readAndClaim(db.sql, "rmap", workerId, "rmap");
  assert.deepEqual(
    claimed.map((t) => [t.task_index, t.attempt, t.max_attempts]).sort(),
    [[2, 3, 4], [3, 2, 3]],
  );
  assert.equal(await completeTask(db.sql, element3, 9), "stale");
  for (const task of claimed) {
    assert.equal(await completeTask(db.sql, task, (task.task_index + 1) ** 2), "completed");
  }
  const [sum] = await readAndClaim(db.sql, "rmap", workerId, "rmap");
  assert.deepEqual(sum.input, { square: [1, 4, 9, 16] });
  await completeTask(db.sql, sum, 30);
  const finished = await run(db.sql, runId);
  assert.deepEqual([finished.status, finished.output], ["completed", { sum: 30 }]);
  // Each element's messages: the old archived copies of the retried ones are gone.
  const [{ archived }] = await db.sql`
    select count(*)::int as archived from pgmq.a_rmap`;
  assert.equal(archived, 5);
});

Deno.test("retry_run() gives each task max_attempts more per round; a run that fails again can be retried again", async () => {
  await using db = await freshDatabase();
  const { workerId, runId } = await failedMapRun(db, "rround");
  await retry(db.sql, runId);
  const failAll = async () => {
    for (let i = 0; i < 10; i++) {
      const tasks = await readAndClaim(db.sql, "rround", workerId, "rround");
      if (tasks.length === 0) return;
      for (const task of tasks) {
        if (task.task_index === 2) await failTask(db.sql, task, `round fail ${task.attempt}`, 0);
        else await completeTask(db.sql, task, 0);
      }
    }
  };
  await failAll();
  assert.equal((await run(db.sql, runId)).status, "failed");
  assert.deepEqual((await attempts(db.sql, runId))["square:2"], "4/2");
  const second = await retry(db.sql, runId);
  assert.deepEqual([second.retry_count, second.tasks], [2, 1]);
  assert.deepEqual((await attempts(db.sql, runId))["square:2"], "4/4");
});

Deno.test("retry_run() of a cancelled run requeues what the cancel stopped; the fenced attempt stays stale", async () => {
  await using db = await freshDatabase();
  const workerId = await chain(db, "rcancel");
  const runId = await startFlow(db.sql, "rcancel", {});
  const [first] = await readAndClaim(db.sql, "rcancel", workerId, "rcancel");
  await cancel(db.sql, runId, "oops");
  const result = await retry(db.sql, runId);
  assert.deepEqual([result.outcome, result.status], ["retried", "started"]);
  const row = await run(db.sql, runId);
  assert.deepEqual([row.cancelled_at, row.cancel_reason], [null, null]);
  assert.deepEqual(await stepStatuses(db.sql, runId), { first: "started", second: "created" });

  const [again] = await readAndClaim(db.sql, "rcancel", workerId, "rcancel");
  assert.deepEqual([again.attempt, again.worker_id], [2, workerId]);
  assert.equal(await completeTask(db.sql, first, "late"), "stale");
  assert.equal(await completeTask(db.sql, again, "ok"), "completed");
  const [second] = await readAndClaim(db.sql, "rcancel", workerId, "rcancel");
  assert.deepEqual(second.input, { first: "ok" });
});

Deno.test("retry_run() answers unchanged for started and completed runs, refuses without live workers unless forced, raises for an unknown id", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "rnone", maxAttempts: 1, steps: [{ slug: "only" }] });
  const runId = await startFlow(db.sql, "rnone", {});
  const started = await retry(db.sql, runId);
  assert.deepEqual([started.outcome, started.status], ["unchanged", "started"]);

  const workerId = await registerWorker(db.sql, "rnone", "rnone");
  const [task] = await readAndClaim(db.sql, "rnone", workerId, "rnone");
  assert.equal(await failTask(db.sql, task, "boom"), "failed");
  await db.sql`update sluice.workers set stopped_at = now()`;
  await assert.rejects(retry(db.sql, runId), (error: Error & { code?: string }) => {
    assert.equal(error.code, "SLR01");
    assert.match(
      error.message,
      /Cannot retry run .* of flow "rnone": no live worker of that flow serves step only \(queue rnone\)/,
    );
    return true;
  });
  assert.equal((await run(db.sql, runId)).status, "failed");
  const forced = await retry(db.sql, runId, true);
  assert.deepEqual([forced.outcome, forced.status], ["retried", "started"]);
  assert.equal(await liveMessages(db.sql, runId), 1);

  const other = await registerWorker(db.sql, "rnone", "rnone", "rnone_2");
  const [next] = await readAndClaim(db.sql, "rnone", other, "rnone");
  await completeTask(db.sql, next, "fine");
  const completed = await retry(db.sql, runId);
  assert.deepEqual([completed.outcome, completed.status, completed.retry_count], [
    "unchanged",
    "completed",
    1,
  ]);
  await assert.rejects(
    retry(db.sql, crypto.randomUUID()),
    /Cannot retry run [0-9a-f-]+: no such run/,
  );
});

Deno.test("retry_run() of a run failed by an unmet condition fails it again at once (the same input)", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "rcond",
    steps: [{ slug: "gate", if: { ok: true }, whenUnmet: "fail" }],
  });
  await registerWorker(db.sql, "rcond", "rcond");
  const runId = await startFlow(db.sql, "rcond", { ok: false });
  assert.equal((await run(db.sql, runId)).status, "failed");
  const result = await retry(db.sql, runId);
  assert.deepEqual([result.outcome, result.status, result.retry_count], ["retried", "failed", 1]);
});

Deno.test("a cancelled and a retried run announce themselves: step:cancelled then run:cancelled, run:retried then step:started; the replay shows both", async () => {
  await using db = await freshDatabase();
  const workerId = await chain(db, "cevents");
  const runId = await startFlow(db.sql, "cevents", {});
  const events: { type: string }[] = [];
  await db.connect(1).listen(runChannel(runId), (payload) => events.push(JSON.parse(payload)));
  await readAndClaim(db.sql, "cevents", workerId, "cevents");
  await cancel(db.sql, runId, "stop it");
  await waitUntil(() => events.some((e) => e.type === "run:cancelled"), "run:cancelled");
  await retry(db.sql, runId);
  await waitUntil(() => events.filter((e) => e.type === "step:started").length === 1, "restart");
  const shape = (e: Record<string, unknown>) => {
    const { at: _at, runId: _runId, ...rest } = e;
    return rest;
  };
  const [{ me }] = await db.sql`select current_user as me`;
  assert.deepEqual(events.map(shape), [
    { type: "step:cancelled", stepSlug: "first" },
    { type: "step:cancelled", stepSlug: "second" },
    // NOTIFY names what a person typed or is; the replay has it (below).
    { type: "run:cancelled", flowSlug: "cevents", omitted: ["reason", "cancelledBy"] },
    { type: "run:retried", flowSlug: "cevents", retryCount: 1, omitted: ["retriedBy"] },
    { type: "step:started", stepSlug: "first", tasks: 1 },
  ]);
  const [{ replay }] = await db.sql`select sluice.run_events(${runId}) as replay`;
  assert.deepEqual(replay.map((e: { type: string }) => e.type), [
    "run:started",
    "run:retried",
    "step:started",
  ]);

  await cancel(db.sql, runId, "again");
  const [{ ended }] = await db.sql`select sluice.run_events(${runId}) as ended`;
  assert.deepEqual(ended.at(-1).type, "run:cancelled");
  assert.equal(ended.at(-1).reason, "again");
  assert.equal(ended.at(-1).cancelledBy, me);
  assert.equal(
    replay.find((e: { type: string }) => e.type === "run:retried").retriedBy,
    me,
  );
});

Deno.test("cancel_run() racing a completion on two connections: whichever commits first wins, the other changes nothing", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "crace", steps: [{ slug: "only" }] });
  const workerId = await registerWorker(db.sql, "crace", "crace");
  const a = db.connect(1);
  const b = db.connect(1);
  const [{ pid: pidA }] = await a`select pg_backend_pid() as pid`;
  const [{ pid: pidB }] = await b`select pg_backend_pid() as pid`;

  // The completion holds the run's lock; the cancel waits for it, then finds the run completed.
  const completed = await startFlow(db.sql, "crace", {});
  const [task] = await readAndClaim(db.sql, "crace", workerId, "crace");
  let cancelAnswer: Promise<unknown> | undefined;
  await a.begin(async (tx) => {
    await tx`select sluice.complete_task(${task.run_id}, ${task.step_slug}, ${task.task_index},
      ${task.attempt}, ${task.worker_id}, '1'::jsonb)`;
    cancelAnswer = b`select sluice.cancel_run(${completed}, 'late cancel') as result`.execute();
    await waitUntilBlocked(db.sql, pidB);
  });
  const [{ result: late }] = await cancelAnswer as [{ result: Record<string, unknown> }];
  assert.deepEqual([late.outcome, late.status], ["unchanged", "completed"]);

  // The cancel holds the lock; the completion waits for it, then is stale.
  const cancelled = await startFlow(db.sql, "crace", {});
  const [task2] = await readAndClaim(db.sql, "crace", workerId, "crace");
  let completeAnswer: Promise<unknown> | undefined;
  await b.begin(async (tx) => {
    await tx`select sluice.cancel_run(${cancelled}, 'first') as result`;
    completeAnswer = a`select sluice.complete_task(${task2.run_id}, ${task2.step_slug},
      ${task2.task_index}, ${task2.attempt}, ${task2.worker_id}, '1'::jsonb) as outcome`.execute();
    await waitUntilBlocked(db.sql, pidA);
  });
  const [{ outcome }] = await completeAnswer as [{ outcome: string }];
  assert.equal(outcome, "stale");
  assert.deepEqual((await run(db.sql, cancelled)).status, "cancelled");

  // Free-running: many runs, each completed and cancelled at once from two connections.
  const runs = [];
  for (let i = 0; i < 20; i++) runs.push(await startFlow(db.sql, "crace", { i }));
  const tasks = await readAndClaim(db.sql, "crace", workerId, "crace");
  await Promise.all([
    (async () => {
      for (const t of tasks) {
        await a`select sluice.complete_task(${t.run_id}, ${t.step_slug}, ${t.task_index},
          ${t.attempt}, ${t.worker_id}, '1'::jsonb)`;
      }
    })(),
    b`select sluice.cancel_runs('crace', 'bulk', batch_size => 100)`,
  ]);
  const rows = await db.sql`
    select r.status, t.status as task_status, r.output
    from sluice.runs r join sluice.step_tasks t using (run_id)
    where r.run_id = any(${runs})`;
  for (const row of rows) {
    assert.ok(
      (row.status === "completed" && row.task_status === "completed") ||
        (row.status === "cancelled" && row.task_status === "cancelled" && row.output === null),
      `inconsistent run: ${JSON.stringify(row)}`,
    );
  }
  for (const id of runs) assert.equal(await liveMessages(db.sql, id), 0);
});
