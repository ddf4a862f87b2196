// Lifecycle: deprecation drain, graceful stop and its grace period, LISTEN wake-up, long polling.
import assert from "node:assert/strict";
import { Flow } from "../../src/dsl/flow.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { freshDatabase } from "../_db.ts";
import { latch, testWorker, waitUntil } from "./_helpers.ts";
import { scaled, within } from "../_support.ts";

Deno.test("a deprecated worker stops polling, finishes its in-flight task, then stops", async () => {
  await using db = await freshDatabase();
  const started = latch();
  const release = latch();
  let calls = 0;
  const flow = new Flow({ slug: "deprecate_me" })
    .step({ slug: "work" }, async () => {
      calls++;
      started.resolve();
      await release.promise;
      return "finished";
    });
  await using worker = await testWorker(flow, db);

  const first = await startFlow(db.sql, flow, {});
  await started.promise;
  await db
    .sql`update sluice.workers set deprecated_at = now() where worker_id = ${worker.workerId}`;
  await waitUntil(() => worker.status === "stopping", "the worker to start draining");

  const second = await startFlow(db.sql, flow, {});

  // Checked once the worker stopped, so the whole drain is covered: the second run's task is
  // still queued and unclaimed (below), and the handler ran once.
  release.resolve();
  await worker.done;
  assert.equal(worker.status, "stopped");
  assert.equal(calls, 1, "a draining worker claims nothing new");
  assert.deepEqual(await waitForRun(db.sql, first, { timeoutMs: scaled(1000), flow }), {
    work: "finished",
  });
  const [row] = await db.sql`
    select stopped_at is not null as stopped from sluice.workers where worker_id = ${worker.workerId}`;
  assert.equal(row.stopped, true);
  const [task] = await db.sql`
    select status, attempts_count from sluice.step_tasks where run_id = ${second}`;
  assert.deepEqual({ ...task }, { status: "queued", attempts_count: 0 });
  assert.equal(worker.logs.find("info", "worker deprecated").length, 1);
});

Deno.test("stop() lets in-flight tasks finish within the grace period and reports them", async () => {
  await using db = await freshDatabase();
  const started = latch();
  const release = latch();
  const flow = new Flow({ slug: "graceful" })
    .step({ slug: "work" }, async (_input, ctx) => {
      started.resolve();
      // A task that honours its signal: an abort before the grace is over would end it here.
      const aborted = new Promise((resolve) =>
        ctx.signal.addEventListener("abort", resolve, { once: true })
      );
      await Promise.race([release.promise, aborted]);
      ctx.signal.throwIfAborted();
      events.push("task returned");
      return "done";
    });
  const events: string[] = [];
  const worker = await testWorker(flow, db, { shutdownGraceMs: 60_000 });

  const runId = await startFlow(db.sql, flow, {});
  await started.promise;
  // The task is still running when the stop begins and once polling has stopped: the stop
  // settles only after the task returned.
  const stopping = worker.stop().then(() => events.push("stopped"));
  assert.equal(worker.status, "stopping");
  await worker.pollingStopped;
  // One turn of the timer queue: an abort due at once (a grace of 0) has fired by now.
  await new Promise((resolve) => setTimeout(resolve, 0));
  release.resolve();
  await stopping;
  assert.deepEqual(events, ["task returned", "stopped"]);
  assert.equal(worker.status, "stopped");
  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(1000), flow }), {
    work: "done",
  });
});

Deno.test("stop() aborts tasks still running after the grace period and fails their attempts", async () => {
  await using db = await freshDatabase();
  const started = latch();
  let reason = "";
  const flow = new Flow({ slug: "impatient", baseDelay: 1 })
    .step({ slug: "work" }, (_input, ctx) => {
      started.resolve();
      return new Promise<string>((_resolve, reject) => {
        ctx.signal.addEventListener("abort", () => {
          reason = ctx.signal.reason.name;
          reject(ctx.signal.reason);
        });
      });
    });
  const worker = await testWorker(flow, db, { shutdownGraceMs: 200 });

  const runId = await startFlow(db.sql, flow, {});
  await started.promise;
  await worker.stop();
  // Which grace expired is in the stored error below: no wall-clock bound needed.
  assert.equal(reason, "AbortError");
  const [task] = await db.sql`
    select status, attempts_count, error_message from sluice.step_tasks where run_id = ${runId}`;
  assert.equal(task.status, "queued");
  assert.equal(task.attempts_count, 1);
  assert.match(
    task.error_message,
    /Worker stopped before the task finished \(shutdown grace of 200 ms/,
  );
  assert.equal(worker.logs.find("warn", "shutdown grace expired").length, 1);
});

Deno.test("pollingStopped resolves once the worker reads no more, while its task still runs", async () => {
  await using db = await freshDatabase();
  const started = latch();
  const release = latch();
  let calls = 0;
  const flow = new Flow({ slug: "handover" }).step({ slug: "work" }, async () => {
    calls++;
    started.resolve();
    await release.promise;
    return "finished";
  });
  const worker = await testWorker(flow, db);
  const first = await startFlow(db.sql, flow, {});
  await started.promise;

  let stopped = false;
  const stopping = worker.stop().then(() => stopped = true);
  await worker.pollingStopped;
  assert.equal(worker.status, "stopping");
  assert.equal(stopped, false, "the task is still in flight");
  const second = await startFlow(db.sql, flow, {});

  // Checked once the stop settled, so every moment after pollingStopped is covered: the second
  // run's task is still queued (below), and the handler ran once.
  release.resolve();
  await stopping;
  assert.equal(worker.status, "stopped");
  assert.equal(calls, 1, "nothing is read after pollingStopped");
  assert.deepEqual(await waitForRun(db.sql, first, { timeoutMs: scaled(1000), flow }), {
    work: "finished",
  });
  const [task] = await db.sql`
    select status, attempts_count from sluice.step_tasks where run_id = ${second}`;
  assert.deepEqual({ ...task }, { status: "queued", attempts_count: 0 });
});

Deno.test("stop({ graceMs }) overrides shutdownGraceMs for one stop; a shorter one brings the abort forward", async () => {
  await using db = await freshDatabase();
  const started = latch();
  const flow = new Flow({ slug: "deadline", baseDelay: 1 })
    .step({ slug: "work" }, (_input, ctx) => {
      started.resolve();
      return new Promise<string>((_resolve, reject) => {
        ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason));
      });
    });
  const worker = await testWorker(flow, db, { shutdownGraceMs: 60_000 });
  const runId = await startFlow(db.sql, flow, {});
  await started.promise;

  await assert.rejects(
    worker.stop({ graceMs: -1 }),
    (error: Error) =>
      error instanceof RangeError &&
      /graceMs must be a finite number >= 0, got -1/.test(error.message),
  );
  assert.equal(worker.status, "running", "a rejected stop changes nothing");

  const first = worker.stop({ graceMs: 30_000 });
  await within(worker.stop({ graceMs: 300 }), "the shorter grace to end the stop", 5_000);
  await first;
  // The stored error names the grace that expired: the second stop's 300 ms, not the first's 30 s.
  const [task] = await db.sql`
    select status, attempts_count, error_message from sluice.step_tasks where run_id = ${runId}`;
  assert.equal(task.status, "queued");
  assert.equal(task.attempts_count, 1);
  assert.match(task.error_message, /shutdown grace of 300 ms expired/);
});

Deno.test("an idle worker is woken by NOTIFY, not by its poll interval", async () => {
  await using db = await freshDatabase();
  const flow = new Flow<{ n: number }>({ slug: "latency" })
    .step({ slug: "a" }, (input) => input.n)
    .step({ slug: "b", dependsOn: ["a"] }, (deps) => deps.a + 1)
    .step({ slug: "c", dependsOn: ["b"] }, (deps) => deps.b + 1);
  // A poll interval far longer than the test: only notifications can wake the worker.
  const pollSeconds = 20;
  await using worker = await testWorker(flow, db, {
    pollIntervalMs: pollSeconds * 1000,
    logLevel: "info",
  });
  assert.equal(worker.logs.find("info", "worker started")[0]?.fields.wake_up, "listen");
  // Idle: its listening connection sits in LISTEN, nothing is queued.
  await waitUntil(async () => {
    const rows = await db.sql`
      select 1 from pg_stat_activity
      where datname = current_database() and state = 'idle' and query ilike 'listen%'`;
    return rows.length > 0;
  }, "the worker's LISTEN connection");

  // Each run's three steps are woken by the notifications of the step before: on the database's
  // clock the run ends well inside one poll interval (tolerance: half of it, for a loaded machine;
  // a worker that waited out its poll would take at least the whole interval per step). The
  // latency figure itself is measured by bench/worker.ts (idle latency).
  for (let i = 0; i < 3; i++) {
    const runId = await startFlow(db.sql, flow, { n: i });
    await waitForRun(db.sql, runId, { timeoutMs: pollSeconds * 4 * 1000 });
    const [{ inTime }] = await db.sql<{ inTime: boolean }[]>`
      select completed_at - started_at < make_interval(secs => ${pollSeconds / 2}) as "inTime"
      from sluice.runs where run_id = ${runId}`;
    assert.equal(inTime, true, `run ${i} ended within half a poll interval of its start`);
  }
});

Deno.test("without LISTEN the worker long-polls and stop interrupts the poll", async () => {
  await using db = await freshDatabase();
  const flow = new Flow({ slug: "long_poll" }).step({ slug: "a" }, () => "polled");
  // A poll far longer than the test's timeout: a stop that waited it out would not finish.
  const worker = await testWorker(flow, db, { listen: false, maxPollSeconds: 60 });
  assert.equal(worker.logs.find("info", "worker started")[0]?.fields.wake_up, "long_poll");

  const runId = await startFlow(db.sql, flow, {});
  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(5000), flow }), {
    a: "polled",
  });
  const poll = await waitUntil(async () => {
    const [row] = await db.sql`
      select pid, query_start from pg_stat_activity
      where datname = current_database() and state = 'active'
        and query like '%sluice.read_messages_with_poll%' and pid <> pg_backend_pid()`;
    return row;
  }, "the worker to be inside a long poll");
  await within(worker.stop(), "stop to interrupt the long poll", 5_000);
  // Database clock: the poll's statement ended (its backend no longer runs it) long before its
  // 60 s were up; the tolerance is the whole poll minus the test's own time.
  const [after] = await db.sql`
    select extract(epoch from clock_timestamp() - ${poll.query_start}::timestamptz)::float8
      as since_poll_began,
      exists (
        select 1 from pg_stat_activity
        where pid = ${poll.pid} and state = 'active' and query like '%sluice.read_messages_with_poll%'
      ) as still_polling`;
  assert.equal(after.still_polling, false, "the long poll was cancelled");
  assert.ok(after.since_poll_began < 30, `stop returned ${after.since_poll_began} s into the poll`);
});

Deno.test("logLevel filters records; fatal ones always pass", async () => {
  await using db = await freshDatabase();
  const flow = new Flow({ slug: "quiet" }).step({ slug: "a" }, () => 1);
  const worker = await testWorker(flow, db, { logLevel: "error" });
  const runId = await startFlow(db.sql, flow, {});
  await waitForRun(db.sql, runId, { timeoutMs: scaled(5000) });
  assert.deepEqual(worker.logs.records, [], "a normal run logs nothing at error");

  // A message sluice did not send is fatal: its record passes the error threshold.
  const [{ msg_id }] = await db.sql`select pgmq.send('quiet', '{}'::jsonb) as msg_id`;
  await worker.done;
  assert.equal(worker.status, "fatal");
  for (const level of ["debug", "info", "warn"] as const) {
    assert.deepEqual(worker.logs.find(level), [], `no ${level} record`);
  }
  const fatal = worker.logs.find("fatal");
  assert.equal(fatal.length, 1);
  assert.deepEqual(fatal[0].fields.message_ids, [msg_id]);
});

Deno.test("a worker given a pool uses it, wakes by NOTIFY, and leaves the pool open", async () => {
  await using db = await freshDatabase();
  const pool = db.connect(3);
  const flow = new Flow({ slug: "borrowed" })
    .step({ slug: "a" }, async (_input, ctx) => {
      const [{ n }] = await ctx.sql`select 41 + 1 as n`;
      return n as number;
    });
  const worker = await testWorker(flow, db, {
    connectionString: undefined,
    sql: pool,
    pollIntervalMs: 60_000,
  });
  const runId = await startFlow(db.sql, flow, {});
  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(5000), flow }), { a: 42 });
  await worker.stop();
  const [{ ok }] = await pool`select true as ok`;
  assert.equal(ok, true);
});
