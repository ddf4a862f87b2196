// Durable waits end to end (docs/waits.md): a worker completes a wait's dependency and computes its
// key or due time; the step waits in the database (no task, no message); sendSignal or the sweep
// releases it and its dependents run.
import assert from "node:assert/strict";
import postgres from "postgres";
import { Flow, sendSignal, signalPayload, StepSlugError, withStepQueues } from "../../mod.ts";
import { startWorker } from "../../src/worker/mod.ts";
import { cancelRun } from "../../src/client/cancel_run.ts";
import { RunFailedError } from "../../src/client/errors.ts";
import { getRun } from "../../src/client/get_run.ts";
import { getVersionDrain } from "../../src/deploy/aliases.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { latch, testWorker, uniqueSlug, waitUntil } from "./_helpers.ts";
import { scaled } from "../_support.ts";

function approvalFlow(slug: string, timeout?: { seconds: number; onTimeout: "fail" | "skip" }) {
  return new Flow<{ id: string }>({ slug: uniqueSlug(slug) })
    .step({ slug: "ask" }, (input) => ({ id: input.id }))
    .waitForSignal({
      slug: "decision",
      dependsOn: ["ask"],
      key: (deps) => `approval:${deps.ask.id}`,
      payload: signalPayload<{ approved: boolean }>(),
      ...(timeout === undefined
        ? {}
        : { timeoutSeconds: timeout.seconds, onTimeout: timeout.onTimeout }),
    })
    .step({ slug: "settle", dependsOn: ["decision"] }, (deps) => ({
      approved: deps.decision?.approved ?? "timed out",
    }));
}

async function stepStatus(db: TestDatabase, runId: string, step: string) {
  const [row] = await db.sql<
    { status: string; wait_key: string | null; wait_until: Date | null; tasks: number }[]
  >`
    select ss.status, ss.wait_key, ss.wait_until,
      (select count(*)::integer from sluice.step_tasks t
        where t.run_id = ss.run_id and t.step_slug = ss.step_slug) as tasks
    from sluice.step_states ss where ss.run_id = ${runId} and ss.step_slug = ${step}`;
  return row;
}

async function waiting(db: TestDatabase, runId: string, step: string): Promise<void> {
  await waitUntil(
    async () => (await stepStatus(db, runId, step))?.status === "waiting",
    `step ${step} waiting`,
  );
}

Deno.test("waitForSignal: the step waits with its key and no task; a signal completes it and its dependents run; a duplicate changes nothing", async () => {
  await using db = await freshDatabase();
  const flow = approvalFlow("signal_after");
  await using _worker = await testWorker(flow, db);
  const runId = await startFlow(db.sql, flow, { id: "r1" });
  await waiting(db, runId, "decision");
  const state = await stepStatus(db, runId, "decision");
  assert.deepEqual([state.wait_key, state.wait_until, state.tasks], ["approval:r1", null, 0]);

  const sent = await sendSignal(db.sql, {
    key: "approval:r1",
    payload: { approved: true },
    signalId: "s1",
  });
  assert.deepEqual(sent, { signalId: "s1", outcome: "sent", released: 1 });
  // The signal's transaction already started the dependent: its task exists now.
  assert.equal((await stepStatus(db, runId, "settle")).tasks, 1);
  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000), flow }), {
    settle: { approved: true },
  });

  const again = await sendSignal(db.sql, {
    key: "approval:r1",
    payload: { approved: false },
    signalId: "s1",
  });
  assert.deepEqual(again, { signalId: "s1", outcome: "duplicate", released: 0 });
  const run = await getRun(db.sql, runId);
  assert.deepEqual(run?.steps.find((s) => s.stepSlug === "decision")?.output, { approved: true });
  await assert.rejects(
    sendSignal(db.sql, { key: "approval:other", payload: null, signalId: "s1" }),
    /that signal id was sent with key "approval:r1"/,
  );
});

Deno.test("waitForSignal: a signal sent before the wait starts is kept and completes the wait as it starts; of two, the earliest", async () => {
  await using db = await freshDatabase();
  // The run exists while its wait has not started: "ask" holds until both signals are sent.
  const asked = latch();
  const proceed = latch();
  const flow = new Flow<{ id: string }>({ slug: uniqueSlug("signal_before") })
    .step({ slug: "ask" }, async (input) => {
      asked.resolve();
      await proceed.promise;
      return { id: input.id };
    })
    .waitForSignal({
      slug: "decision",
      dependsOn: ["ask"],
      key: (deps) => `approval:${deps.ask.id}`,
      payload: signalPayload<{ approved: boolean }>(),
    })
    .step({ slug: "settle", dependsOn: ["decision"] }, (deps) => ({
      approved: deps.decision.approved,
    }));
  await using _worker = await testWorker(flow, db);
  const runId = await startFlow(db.sql, flow, { id: "r2" });
  await asked.promise;
  const early = await sendSignal(db.sql, {
    key: "approval:r2",
    payload: { approved: false },
    signalId: "early",
  });
  assert.deepEqual(early, { signalId: "early", outcome: "sent", released: 0 });
  // Two signals kept for the key: the wait takes the earliest (docs/waits.md), not the latest.
  await sendSignal(db.sql, {
    key: "approval:r2",
    payload: { approved: true },
    signalId: "a_later",
  });
  proceed.resolve();
  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000), flow }), {
    settle: { approved: false },
  });
});

Deno.test("waitForSignal: a signal sent in a rolled-back transaction is never seen; one sent in a committed transaction is", async () => {
  await using db = await freshDatabase();
  const flow = approvalFlow("signal_rollback");
  await using _worker = await testWorker(flow, db);
  const runId = await startFlow(db.sql, flow, { id: "r3" });
  await waiting(db, runId, "decision");

  await assert.rejects(
    db.sql.begin(async (tx) => {
      const result = await sendSignal(tx, {
        key: "approval:r3",
        payload: { approved: true },
        signalId: "rolled_back",
      });
      assert.equal(result.released, 1);
      throw new Error("the application's transaction fails");
    }),
    /the application's transaction fails/,
  );
  assert.equal((await stepStatus(db, runId, "decision")).status, "waiting");
  const [{ kept }] = await db.sql<{ kept: number }[]>`
    select count(*)::integer as kept from sluice.signals`;
  assert.equal(kept, 0);

  await db.sql.begin(async (tx) => {
    await sendSignal(tx, { key: "approval:r3", payload: { approved: true }, signalId: "ok" });
  });
  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000), flow }), {
    settle: { approved: true },
  });
});

Deno.test("waitForSignal timeout: 'skip' runs the dependents without it; 'fail' fails the run", async () => {
  await using db = await freshDatabase();
  const skipping = approvalFlow("timeout_skip", { seconds: 3600, onTimeout: "skip" });
  const failing = approvalFlow("timeout_fail", { seconds: 3600, onTimeout: "fail" });
  await using _a = await testWorker(skipping, db);
  await using _b = await testWorker(failing, db);
  const skipRun = await startFlow(db.sql, skipping, { id: "t1" });
  const failRun = await startFlow(db.sql, failing, { id: "t2" });
  await waiting(db, skipRun, "decision");
  await waiting(db, failRun, "decision");
  const state = await stepStatus(db, skipRun, "decision");
  assert.ok(state.wait_until !== null && state.wait_until.getTime() > Date.now() + 3500_000);

  // The timeout passes: move the due time rather than wait an hour. The workers' heartbeat sweep
  // releases both.
  await db.sql`update sluice.step_states set wait_until = now() - interval '1 second'
    where status = 'waiting'`;
  assert.deepEqual(
    await waitForRun(db.sql, skipRun, { timeoutMs: scaled(10_000), flow: skipping }),
    {
      settle: { approved: "timed out" },
    },
  );
  const skipped = await getRun(db.sql, skipRun);
  assert.equal(skipped?.steps.find((s) => s.stepSlug === "decision")?.status, "skipped");
  await assert.rejects(
    waitForRun(db.sql, failRun, { timeoutMs: scaled(10_000) }),
    (error: unknown) =>
      error instanceof RunFailedError &&
      /timed out after 3600 s waiting for a signal with key "approval:t2"/.test(error.message),
  );
});

Deno.test("sleep: the step waits until its due time and completes with it; a step-queued flow needs no worker for it", async () => {
  await using db = await freshDatabase();
  const flow = withStepQueues(
    new Flow<{ days: number }>({ slug: uniqueSlug("sleep") })
      .step({ slug: "welcome" }, (input) => ({ days: input.days }))
      .sleep({ slug: "pause", dependsOn: ["welcome"] }, (deps) => ({
        seconds: deps.welcome.days * 86400,
      }))
      .step({ slug: "remind", dependsOn: ["pause"] }, (deps) => `reminded after ${deps.pause}`),
  );
  await using _welcome = await testWorker(flow, db, { stepSlug: "welcome" });
  await using _remind = await testWorker(flow, db, { stepSlug: "remind" });
  const runId = await startFlow(db.sql, flow, { days: 3 });
  await waiting(db, runId, "pause");
  const state = await stepStatus(db, runId, "pause");
  assert.equal(state.tasks, 0);
  const due = new Date(Date.now() - 1000);
  await db.sql`update sluice.step_states set wait_until = ${due}
    where run_id = ${runId} and step_slug = 'pause'`;
  const output = await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000), flow });
  const [{ until }] = await db.sql<{ until: Date }[]>`
    select wait_until as until from sluice.step_states
    where run_id = ${runId} and step_slug = 'pause'`;
  assert.deepEqual(output, { remind: `reminded after ${until.toISOString()}` });
});

Deno.test("cancelRun() of a waiting run cancels the wait: a later signal releases nothing", async () => {
  await using db = await freshDatabase();
  const flow = approvalFlow("cancel_waiting");
  await using _worker = await testWorker(flow, db);
  const runId = await startFlow(db.sql, flow, { id: "c1" });
  await waiting(db, runId, "decision");
  const result = await cancelRun(db.sql, runId, { reason: "no longer needed" });
  assert.equal(result.outcome, "cancelled");
  assert.equal((await stepStatus(db, runId, "decision")).status, "cancelled");
  const sent = await sendSignal(db.sql, { key: "approval:c1", payload: null, signalId: "late" });
  assert.equal(sent.released, 0);
  assert.equal((await getRun(db.sql, runId))?.status, "cancelled");
});

Deno.test("release_due_waits: a sleep is due exactly its seconds after it began waiting, and not released a moment before", async () => {
  await using db = await freshDatabase();
  const flow = new Flow<{ n: number }>({ slug: uniqueSlug("due") })
    .step({ slug: "first" }, (input) => input.n)
    .sleep({ slug: "pause", dependsOn: ["first"] }, () => ({ seconds: 3600 }))
    .step({ slug: "after", dependsOn: ["pause"] }, (deps) => deps.pause);
  let runId: string;
  {
    await using _worker = await testWorker(flow, db);
    runId = await startFlow(db.sql, flow, { n: 1 });
    await waiting(db, runId, "pause");
  }
  const [{ wait }] = await db.sql<{ wait: number }[]>`
    select extract(epoch from wait_until - waiting_at)::float8 as wait from sluice.step_states
    where run_id = ${runId} and step_slug = 'pause'`;
  assert.equal(wait, 3600);
  // now() is one instant per transaction: the due time is set relative to it, and no worker runs.
  const released = await db.sql.begin(async (tx) => {
    await tx`update sluice.step_states set wait_until = now() + interval '1 millisecond'
      where run_id = ${runId} and step_slug = 'pause'`;
    const [early] = await tx<{ n: number }[]>`select sluice.release_due_waits() as n`;
    await tx`update sluice.step_states set wait_until = now()
      where run_id = ${runId} and step_slug = 'pause'`;
    const [due] = await tx<{ n: number }[]>`select sluice.release_due_waits() as n`;
    return [early.n, due.n];
  });
  assert.deepEqual(released, [0, 1]);
  assert.equal((await stepStatus(db, runId, "pause")).status, "completed");
});

Deno.test("release_due_waits: many concurrent sweepers release each due timer exactly once", async () => {
  await using db = await freshDatabase();
  const flow = new Flow<{ n: number }>({ slug: uniqueSlug("sweepers") })
    .step({ slug: "first" }, (input) => input.n)
    .sleep({ slug: "pause", dependsOn: ["first"] }, () => ({ seconds: 3600 }))
    .step({ slug: "after", dependsOn: ["pause"] }, (deps) => deps.pause);
  const runIds: string[] = [];
  {
    await using _worker = await testWorker(flow, db);
    for (let i = 0; i < 20; i++) runIds.push(await startFlow(db.sql, flow, { n: i }));
    await waitUntil(async () => {
      const [{ n }] = await db.sql<{ n: number }[]>`
        select count(*)::integer as n from sluice.step_states where status = 'waiting'`;
      return n === 20;
    }, "20 waiting sleeps");
  }
  // No worker runs now: only the sweepers below release anything.
  await db.sql`update sluice.step_states set wait_until = now() - interval '1 second'
    where status = 'waiting'`;
  const sweepers = Array.from(
    { length: 6 },
    () => postgres(db.url, { max: 1, onnotice: () => {} }),
  );
  try {
    const released = await Promise.all(
      sweepers.map(async (sql) => {
        let total = 0;
        // Sweep until nothing is due: a sweeper that finds every due run locked by another
        // releases nothing this round and tries again.
        for (;;) {
          const [{ n, left }] = await sql<{ n: number; left: number }[]>`
            select sluice.release_due_waits(3) as n,
              (select count(*)::integer from sluice.step_states where status = 'waiting') as left`;
          total += n;
          if (left === 0) return total;
        }
      }),
    );
    assert.equal(released.reduce((a, b) => a + b, 0), 20);
  } finally {
    await Promise.all(sweepers.map((sql) => sql.end()));
  }
  const [{ completed, tasks }] = await db.sql<{ completed: number; tasks: number }[]>`
    select
      (select count(*)::integer from sluice.step_states
        where step_slug = 'pause' and status = 'completed') as completed,
      (select count(*)::integer from sluice.step_tasks where step_slug = 'after') as tasks`;
  assert.deepEqual([completed, tasks], [20, 20]);
});

Deno.test("a step worker for a wait step is refused before touching the database, naming the steps it can serve", async () => {
  const flow = withStepQueues(approvalFlow("no_wait_worker"));
  await assert.rejects(
    startWorker(flow, { connectionString: "postgres://127.0.0.1:1/none", stepSlug: "decision" }),
    (error: unknown) => {
      assert.ok(error instanceof StepSlugError);
      assert.deepEqual([error.reason, error.stepSlug, error.stepSlugs], [
        "unknown",
        "decision",
        ["ask", "settle"],
      ]);
      assert.match(error.message, /"decision" is a wait step \(signal\): it holds no task/);
      return true;
    },
  );
});

Deno.test("one heartbeat releases a burst of due sleeps larger than a batch, not 100 per beat", async () => {
  await using db = await freshDatabase();
  const flow = new Flow<{ n: number }>({ slug: uniqueSlug("burst") })
    .step({ slug: "first" }, (input) => input.n)
    .sleep({ slug: "pause", dependsOn: ["first"] }, () => ({ seconds: 3600 }))
    .step({ slug: "after", dependsOn: ["pause"] }, (deps) => deps.pause.length);
  const burst = 250;
  {
    await using _worker = await testWorker(flow, db, { maxConcurrent: 20 });
    await db.sql`select sluice.start_flow(${flow.slug}, jsonb_build_object('n', i))
      from generate_series(1, ${burst}) i`;
    await waitUntil(async () => {
      const [{ n }] = await db.sql<{ n: number }[]>`
        select count(*)::integer as n from sluice.step_states where status = 'waiting'`;
      return n === burst;
    }, `${burst} waiting sleeps`);
  }
  await db.sql`update sluice.step_states set wait_until = now() - interval '1 second'
    where status = 'waiting'`;
  // The first beat comes after one interval and may sweep for half of one (5 s): it releases
  // all of them, where one batch per beat would log 100 first.
  await using worker = await testWorker(flow, db, { heartbeatIntervalMs: 10_000 });
  await waitUntil(
    () => worker.logs.find("info", "due waits released").length > 0,
    "the first beat's release",
    30_000,
  );
  assert.equal(worker.logs.find("info", "due waits released")[0].fields.waits, burst);
});

Deno.test("a waiting run keeps its version from draining: active, with no task queued or started", async () => {
  await using db = await freshDatabase();
  const flow = approvalFlow("drain_waits");
  await using _worker = await testWorker(flow, db);
  const runId = await startFlow(db.sql, flow, { id: "d1" });
  await waiting(db, runId, "decision");
  const during = await getVersionDrain(db.sql, flow.slug);
  assert.deepEqual(
    [during?.activeRuns, during?.queuedTasks, during?.startedTasks, during?.workDrained],
    [1, 0, 0, false],
  );
  await sendSignal(db.sql, { key: "approval:d1", payload: { approved: true }, signalId: "d1" });
  await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000), flow });
  assert.equal((await getVersionDrain(db.sql, flow.slug))?.workDrained, true);
});
