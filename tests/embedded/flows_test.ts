// End to end on the embedded database (dev/embedded_postgres.ts): the file starts PGlite in this
// process once, migrates it (PGMQ compat layer) and runs real workers on it, each step with flows
// of its own and workers stopped at its end. The embedded session does
// not deliver notifications, so the workers find new messages by reading every 50 ms.
import assert from "node:assert/strict";
import {
  connect,
  Flow,
  getRun,
  getRunTasks,
  startFlow,
  startWorker,
  waitForRun,
  watchRun,
  withStepQueues,
  type WorkerHandle,
} from "../../mod.ts";
import { migrate } from "../../src/migrations/migrate.ts";
import { startEmbeddedPostgres } from "../../dev/embedded_postgres.ts";

/** An embedded database with sluice installed, and workers that are stopped with it. */
async function embeddedSluice() {
  const pg = await startEmbeddedPostgres();
  const sql = connect(pg.url, { max: 2 });
  const workers: WorkerHandle[] = [];
  await migrate(sql);
  return {
    sql,
    url: pg.url,
    /** `startWorker(flow, options)` with test defaults; stopped on dispose. */
    async worker(flow: unknown, options: Record<string, unknown>) {
      const worker = await startWorker(
        flow as never,
        { poolSize: 2, pollIntervalMs: 50, logger: () => {}, ...options } as never,
      );
      workers.push(worker);
      return worker;
    },
    /** Stops the workers started so far. */
    async stopWorkers() {
      for (const worker of workers.splice(0)) await worker.stop();
    },
    async [Symbol.asyncDispose]() {
      for (const worker of workers.splice(0)) await worker.stop();
      await sql.end();
      await pg.stop();
    },
  };
}

// Over LISTEN, waitForRun's default.
const WAIT = { timeoutMs: 30_000 };

Deno.test("embedded: flows on one embedded database", async (t) => {
  await using db = await embeddedSluice();
  const step = (name: string, fn: () => Promise<void>) =>
    t.step(name, async () => {
      try {
        await fn();
      } finally {
        await db.stopWorkers();
      }
    });

  await step("NOTIFY wakes an idle worker and carries the run's events to a watcher", async () => {
    const flow = new Flow<{ n: number }>({ slug: "emb_notify" })
      .step({ slug: "a" }, (input) => input.n + 1)
      .step({ slug: "b", dependsOn: ["a"] }, (deps) => deps.a * 2);
    // Neither reads again on its own within the test: the worker polls every 10 minutes, the
    // watcher resyncs every 10 minutes. Only notifications can move them.
    const tenMinutes = 600_000;
    await db.worker(flow, { connectionString: db.url, pollIntervalMs: tenMinutes });
    const runId = await startFlow(db.sql, flow, { n: 1 });
    const events: string[] = [];
    const giveUp = AbortSignal.timeout(30_000);
    for await (
      const event of watchRun(db.sql, runId, { signal: giveUp, resyncIntervalMs: tenMinutes })
    ) {
      events.push(event.type);
      if (event.type === "run:completed") {
        assert.deepEqual(event.output, { b: 4 });
        break;
      }
    }
    assert.equal(events.at(-1), "run:completed", `events before giving up: ${events.join(", ")}`);
  });

  await step("a linear flow runs to completion", async () => {
    const flow = new Flow<{ n: number }>({ slug: "emb_linear" })
      .step({ slug: "a" }, (input) => input.n + 1)
      .step({ slug: "b", dependsOn: ["a"] }, (deps) => deps.a * 10)
      .step({ slug: "c", dependsOn: ["b"] }, (deps) => `n=${deps.b}`);
    await db.worker(flow, { connectionString: db.url });
    const runId = await startFlow(db.sql, flow, { n: 1 });
    assert.deepEqual(await waitForRun(db.sql, runId, { ...WAIT, flow }), { c: "n=20" });
  });

  await step("a map step runs one task per element and keeps their order", async () => {
    const flow = new Flow<{ items: number[] }>({ slug: "emb_map" })
      .array({ slug: "items" }, (input) => input.items)
      .map({ slug: "double", array: "items" }, (item) => item * 2);
    await db.worker(flow, { connectionString: db.url, maxConcurrent: 4 });
    const runId = await startFlow(db.sql, flow, { items: [1, 2, 3, 4, 5] });
    assert.deepEqual(await waitForRun(db.sql, runId, { ...WAIT, flow }), {
      double: [2, 4, 6, 8, 10],
    });
    const run = await getRun(db.sql, runId);
    assert.equal(run!.steps.find((step) => step.stepSlug === "double")!.initialTasks, 5);
  });

  await step("a failed attempt is retried after the backoff and completes", async () => {
    const flow = new Flow<{ n: number }>({ slug: "emb_retry", maxAttempts: 3, baseDelay: 1 })
      .step({ slug: "flaky" }, (input, ctx) => {
        if (ctx.attempt === 1) throw new Error("first attempt fails");
        return input.n * 2;
      });
    await db.worker(flow, { connectionString: db.url });
    const runId = await startFlow(db.sql, flow, { n: 21 });
    assert.deepEqual(await waitForRun(db.sql, runId, { ...WAIT, flow }), { flaky: 42 });
    const tasks = await getRunTasks(db.sql, runId);
    assert.equal(tasks.length, 1);
    assert.equal(tasks[0].attempts, 2);
  });

  await step("a step whose condition does not match is skipped", async () => {
    const flow = new Flow<{ express: boolean }>({ slug: "emb_condition" })
      .step({ slug: "always" }, () => "ran")
      .step({ slug: "express", if: { express: true } }, () => "fast")
      .step({ slug: "end", dependsOn: ["always", "express"] }, (deps) => deps.express ?? "none");
    await db.worker(flow, { connectionString: db.url });
    const runId = await startFlow(db.sql, flow, { express: false });
    assert.deepEqual(await waitForRun(db.sql, runId, { ...WAIT, flow }), { end: "none" });
    const run = await getRun(db.sql, runId);
    const express = run!.steps.find((step) => step.stepSlug === "express")!;
    assert.equal(express.status, "skipped");
    assert.equal(express.skipReason, "condition_unmet");
  });

  await step("a step-queued flow runs with one worker per step", async () => {
    const flow = withStepQueues(
      new Flow<{ n: number }>({ slug: "emb_steps" })
        .step({ slug: "a" }, (input) => input.n + 1)
        .step({ slug: "b", dependsOn: ["a"] }, (deps) => deps.a * 10),
    );
    await db.worker(flow, { connectionString: db.url, stepSlug: "a" });
    await db.worker(flow, { connectionString: db.url, stepSlug: "b" });
    const runId = await startFlow(db.sql, flow, { n: 1 });
    assert.deepEqual(await waitForRun(db.sql, runId, { ...WAIT, flow }), { b: 20 });
  });
});
