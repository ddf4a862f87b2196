// Run control with real workers: a cancelled run's running handlers see their AbortSignal fire at
// the worker's next heartbeat and their reports are stale; a retried map run re-executes only the
// elements that did not complete.
import assert from "node:assert/strict";
import { Flow } from "../../mod.ts";
import { cancelRun } from "../../src/client/cancel_run.ts";
import { RunCancelledError, RunFailedError, RunNotFoundError } from "../../src/client/errors.ts";
import { getRun } from "../../src/client/get_run.ts";
import { retryRun } from "../../src/client/retry_run.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { freshDatabase } from "../_db.ts";
import { latch, testWorker, uniqueSlug, waitUntil } from "./_helpers.ts";
import { scaled } from "../_support.ts";

Deno.test("cancelRun() while a handler runs: its signal aborts with the reason, its late report is stale, the next step never starts", async () => {
  await using db = await freshDatabase();
  const started = latch();
  let reason: unknown;
  const next: string[] = [];
  const flow = new Flow<{ n: number }>({ slug: uniqueSlug("cancel_running"), timeout: 60 })
    .step({ slug: "slow" }, async (_input, ctx) => {
      started.resolve();
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
      reason = ctx.signal.reason;
      // Reports anyway: the attempt is fenced, so this output is never stored.
      return "finished after all";
    })
    .step({ slug: "after", dependsOn: ["slow"] }, () => next.push("ran"));
  await using worker = await testWorker(flow, db, { heartbeatIntervalMs: 100 });
  const runId = await startFlow(db.sql, flow, { n: 1 });
  await started.promise;

  const result = await cancelRun(db.sql, runId, { reason: "operator said stop" });
  assert.deepEqual([result.outcome, result.status, result.tasks], ["cancelled", "cancelled", 1]);
  await waitUntil(() => reason !== undefined, "the handler's signal to abort");
  assert.ok(reason instanceof DOMException);
  assert.equal(reason.name, "AbortError");
  assert.match(reason.message, new RegExp(`Run ${runId} was cancelled: operator said stop`));
  await waitUntil(
    () => worker.logs.find("warn", "stale report ignored").length > 0,
    "the stale report",
  );
  const run = await getRun(db.sql, runId);
  assert.equal(run?.status, "cancelled");
  assert.equal(run?.cancelReason, "operator said stop");
  assert.deepEqual(run?.steps.map((s) => [s.stepSlug, s.status, s.output]), [
    ["slow", "cancelled", null],
    ["after", "cancelled", null],
  ]);
  assert.deepEqual(next, []);
  await assert.rejects(
    waitForRun(db.sql, runId, { timeoutMs: scaled(5000) }),
    (error: unknown) =>
      error instanceof RunCancelledError && error.reason === "operator said stop" &&
      error.runId === runId,
  );
  await assert.rejects(
    waitForRun(db.sql, runId, { timeoutMs: scaled(5000), listen: false }),
    RunCancelledError,
  );
  const again = await cancelRun(db.sql, runId, { reason: "twice" });
  assert.deepEqual([again.outcome, again.reason], ["unchanged", "operator said stop"]);
  await assert.rejects(
    cancelRun(db.sql, crypto.randomUUID()),
    (error: unknown) => error instanceof RunNotFoundError && /no such run/.test(error.message),
  );
});

Deno.test("cancelRun() during a map fan-out aborts the running elements and no other element ever runs", async () => {
  await using db = await freshDatabase();
  const executed: number[] = [];
  const aborted: number[] = [];
  const flow = new Flow<number[]>({ slug: uniqueSlug("cancel_fanout"), timeout: 60 })
    .map({ slug: "work" }, async (n, ctx) => {
      executed.push(n);
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
      aborted.push(n);
      throw ctx.signal.reason;
    });
  await using worker = await testWorker(flow, db, { maxConcurrent: 2, batchSize: 2 });
  const runId = await startFlow(db.sql, flow, [1, 2, 3, 4, 5, 6]);
  await waitUntil(() => executed.length === 2, "two elements running");

  assert.equal((await cancelRun(db.sql, runId, { reason: "too big" })).tasks, 6);
  await waitUntil(() => aborted.length === 2, "both running elements aborted");
  await waitUntil(() => worker.logs.find("warn", "stale report ignored").length === 2, "stale");
  const tasks = await db.sql`
    select status, count(*)::int as n from sluice.step_tasks where run_id = ${runId}
    group by status`;
  assert.deepEqual(tasks.map((r) => [r.status, r.n]), [["cancelled", 6]]);
  assert.deepEqual(executed.sort(), aborted.sort());
  assert.equal(executed.length, 2);
});

Deno.test("retryRun() of a failed map run re-executes only the failed element, continuing its attempt number; the join runs once", async () => {
  await using db = await freshDatabase();
  const executions = new Map<number, number>();
  const seen: [number, number][] = [];
  let apiDown = true;
  let joins = 0;
  const slug = uniqueSlug("retry_map");
  const flow = new Flow<number[]>({ slug, maxAttempts: 1, timeout: 30 })
    .map({ slug: "square" }, async (n, ctx) => {
      executions.set(n, (executions.get(n) ?? 0) + 1);
      if (n === 3) seen.push([ctx.attempt, ctx.maxAttempts]);
      if (n === 3 && apiDown) {
        // Fail only once every other element's completion is stored: none is cancelled with the
        // run, so exactly the failed element is re-executed.
        await waitUntil(async () => {
          const [{ done }] = await ctx.sql`
            select count(*)::int as done from sluice.step_tasks
            where run_id = ${ctx.runId} and status = 'completed'`;
          return done === 4;
        }, "the other elements' completions");
        throw new Error("downstream API is down");
      }
      return n * n;
    })
    .step({ slug: "sum", dependsOn: ["square"] }, (deps) => {
      joins++;
      return deps.square.reduce((a, b) => a + b, 0);
    });
  await using _worker = await testWorker(flow, db, { maxConcurrent: 5 });
  const runId = await startFlow(db.sql, flow, [1, 2, 3, 4, 5]);
  await assert.rejects(waitForRun(db.sql, runId, { timeoutMs: scaled(15_000) }), RunFailedError);
  assert.equal(joins, 0);

  apiDown = false;
  const result = await retryRun(db.sql, runId);
  assert.deepEqual([result.outcome, result.status, result.retryCount, result.tasks], [
    "retried",
    "started",
    1,
    1,
  ]);
  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(15_000), flow }), {
    sum: 55,
  });
  assert.deepEqual(Object.fromEntries(executions), { 1: 1, 2: 1, 3: 2, 4: 1, 5: 1 });
  assert.equal(joins, 1);
  // The retried element's second attempt is attempt 2, the last of its round.
  assert.deepEqual(seen, [[1, 1], [2, 2]]);
  const run = await getRun(db.sql, runId);
  assert.equal(run?.retryCount, 1);
  const [{ me }] = await db.sql`select current_user as me`;
  assert.equal(run?.retriedBy, me);
  const again = await retryRun(db.sql, runId);
  assert.deepEqual([again.outcome, again.status], ["unchanged", "completed"]);
});
