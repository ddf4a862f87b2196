// A cancel that waits for a run's lock sees every task the lock's holder created (issue 45): a
// completion that releases a dependent, a map fan-out, a signal and the due-wait sweep each hold
// the run's lock in an open transaction while a cancel on another connection waits for it; after
// the holder commits, the cancel must cancel the new tasks and archive their messages, so no
// worker can claim work of a cancelled run.
import assert from "node:assert/strict";
import { Flow, signalPayload } from "../../mod.ts";
import { compileFlow as compileDslFlow } from "../../src/client/compile_flow.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { waitUntilBlocked } from "../pgmq/_pgmq.ts";
import {
  compileFlow,
  json,
  liveMessages,
  read,
  readAndClaim,
  registerWorker,
  type Sql,
  startFlow,
  taskStatuses,
} from "./_fixtures.ts";

/**
 * Runs `hold` in a transaction on one connection and, while it holds its locks, cancels `runId`
 * on another, which waits for the run's lock; commits `hold`, then answers the cancel's result.
 */
async function cancelBehind(
  db: TestDatabase,
  runId: string,
  hold: (tx: Sql) => Promise<unknown>,
): Promise<Record<string, unknown>> {
  const holder = db.connect(1);
  const canceller = db.connect(1);
  const [{ pid }] = await canceller`select pg_backend_pid() as pid`;
  let answer: Promise<{ result: Record<string, unknown> }[]> | undefined;
  await holder.begin(async (tx) => {
    await hold(tx as unknown as Sql);
    answer = canceller<{ result: Record<string, unknown> }[]>`
      select sluice.cancel_run(${runId}, 'behind the lock') as result`.execute();
    await waitUntilBlocked(db.sql, pid);
  });
  const [{ result }] = await answer!;
  return result;
}

/** Messages of the run's tasks that sit in the archive of the task's queue. */
async function archivedMessages(sql: Sql, runId: string): Promise<number> {
  const tasks = await sql<{ queue_name: string; message_id: string }[]>`
    select queue_name, message_id from sluice.step_tasks where run_id = ${runId}`;
  let archived = 0;
  for (const task of tasks) {
    const [row] = await sql.unsafe(
      `select count(*)::int as n from pgmq.${"a_" + task.queue_name} where msg_id = $1`,
      [task.message_id],
    );
    archived += row.n;
  }
  return archived;
}

async function assertNothingLive(sql: Sql, runId: string, queue: string): Promise<void> {
  assert.equal(await liveMessages(sql, runId), 0, "a live message of the cancelled run");
  assert.equal((await read(sql, queue)).length, 0, "a claimable message of the cancelled run");
  const [{ open }] = await sql<{ open: number }[]>`
    select count(*)::int as open from sluice.step_tasks
    where run_id = ${runId} and status in ('queued', 'started')`;
  assert.equal(open, 0, "an open task of the cancelled run");
}

Deno.test("cancel_run() waiting behind a completion that releases a dependent cancels the dependent's new task and archives its message", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "clw_chain",
    steps: [{ slug: "first" }, { slug: "second", deps: ["first"] }],
  });
  const workerId = await registerWorker(db.sql, "clw_chain", "clw_chain");
  const runId = await startFlow(db.sql, "clw_chain", {});
  const [task] = await readAndClaim(db.sql, "clw_chain", workerId, "clw_chain");

  const result = await cancelBehind(
    db,
    runId,
    (tx) =>
      tx`select sluice.complete_task(${task.run_id}, ${task.step_slug}, ${task.task_index},
      ${task.attempt}, ${task.worker_id}, '1'::jsonb)`,
  );

  assert.deepEqual([result.outcome, result.status, result.tasks], ["cancelled", "cancelled", 1]);
  assert.deepEqual(await taskStatuses(db.sql, runId), {
    "first:0": "completed",
    "second:0": "cancelled",
  });
  assert.equal(await archivedMessages(db.sql, runId), 2, "first's by its completion, second's");
  await assertNothingLive(db.sql, runId, "clw_chain");
});

Deno.test("cancel_run() waiting behind a completion that fans out a map cancels every element's task", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "clw_map",
    steps: [{ slug: "list" }, { slug: "each", type: "map", deps: ["list"], mapSource: "list" }],
  });
  const workerId = await registerWorker(db.sql, "clw_map", "clw_map");
  const runId = await startFlow(db.sql, "clw_map", {});
  const [task] = await readAndClaim(db.sql, "clw_map", workerId, "clw_map");

  const result = await cancelBehind(
    db,
    runId,
    (tx) =>
      tx`select sluice.complete_task(${task.run_id}, ${task.step_slug}, ${task.task_index},
      ${task.attempt}, ${task.worker_id}, '[1, 2, 3]'::jsonb)`,
  );

  assert.deepEqual([result.outcome, result.tasks], ["cancelled", 3]);
  assert.deepEqual(await taskStatuses(db.sql, runId), {
    "list:0": "completed",
    "each:0": "cancelled",
    "each:1": "cancelled",
    "each:2": "cancelled",
  });
  assert.equal(await archivedMessages(db.sql, runId), 4);
  await assertNothingLive(db.sql, runId, "clw_map");
});

/** A flow `ask` -> signal wait `decision` (key from ask) -> `settle`, its run waiting. */
async function waitingRun(db: TestDatabase, slug: string) {
  const flow = new Flow<{ id: string }>({ slug })
    .step({ slug: "ask" }, (input) => input)
    .waitForSignal({
      slug: "decision",
      dependsOn: ["ask"],
      key: (deps) => `approval:${deps.ask.id}`,
      payload: signalPayload<{ approved: boolean }>(),
      timeoutSeconds: 3600,
      onTimeout: "skip",
    })
    .step({ slug: "settle", dependsOn: ["decision"] }, () => null);
  await compileDslFlow(db.sql, flow);
  const workerId = await registerWorker(db.sql, slug, slug);
  const runId = await startFlow(db.sql, slug, { id: runKey(slug) });
  const [task] = await readAndClaim(db.sql, slug, workerId, slug);
  const [{ result }] = await db.sql`select sluice.complete_tasks(${
    json(db.sql, [{
      run_id: task.run_id,
      step_slug: task.step_slug,
      task_index: task.task_index,
      attempt: task.attempt,
      worker_id: task.worker_id,
      output: { id: runKey(slug) },
      waits: [{ step_slug: "decision", key: `approval:${runKey(slug)}` }],
    }])
  }::jsonb) as result`;
  assert.equal(result.completed, 1);
  const [{ status }] = await db.sql`
    select status from sluice.step_states where run_id = ${runId} and step_slug = 'decision'`;
  assert.equal(status, "waiting");
  return runId;
}

function runKey(slug: string): string {
  return `${slug}-1`;
}

Deno.test("cancel_run() waiting behind send_signal() cancels the task of the step the signal released", async () => {
  await using db = await freshDatabase();
  const runId = await waitingRun(db, "clw_signal");

  const result = await cancelBehind(db, runId, async (tx) => {
    const [{ answer }] = await tx`select sluice.send_signal(${`approval:${runKey("clw_signal")}`},
      '{"approved": true}'::jsonb, 'sig-1') as answer`;
    assert.equal(answer.released, 1);
  });

  assert.deepEqual([result.outcome, result.tasks], ["cancelled", 1]);
  assert.deepEqual(await taskStatuses(db.sql, runId), {
    "ask:0": "completed",
    "settle:0": "cancelled",
  });
  await assertNothingLive(db.sql, runId, "clw_signal");
});

Deno.test("cancel_run() waiting behind release_due_waits() cancels the task of the step the sweep released", async () => {
  await using db = await freshDatabase();
  const runId = await waitingRun(db, "clw_sweep");
  // The wait's timeout passes now (onTimeout skip: settle runs without it).
  await db.sql`update sluice.step_states set wait_until = now() - interval '1 second'
    where run_id = ${runId} and step_slug = 'decision'`;

  const result = await cancelBehind(db, runId, async (tx) => {
    const [{ released }] = await tx`select sluice.release_due_waits() as released`;
    assert.equal(released, 1);
  });

  assert.deepEqual([result.outcome, result.tasks], ["cancelled", 1]);
  assert.deepEqual(await taskStatuses(db.sql, runId), {
    "ask:0": "completed",
    "settle:0": "cancelled",
  });
  await assertNothingLive(db.sql, runId, "clw_sweep");
});

Deno.test("cancel_runs() waiting behind completions of several runs cancels every task they created", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "clw_batch",
    steps: [{ slug: "first" }, { slug: "second", deps: ["first"] }],
  });
  const workerId = await registerWorker(db.sql, "clw_batch", "clw_batch");
  const runIds: string[] = [];
  for (let i = 0; i < 3; i++) runIds.push(await startFlow(db.sql, "clw_batch", { i }));
  const tasks = await readAndClaim(db.sql, "clw_batch", workerId, "clw_batch");

  const holder = db.connect(1);
  const canceller = db.connect(1);
  const [{ pid }] = await canceller`select pg_backend_pid() as pid`;
  let answer: Promise<{ result: { cancelled: number } }[]> | undefined;
  await holder.begin(async (tx) => {
    for (const task of tasks) {
      await tx`select sluice.complete_task(${task.run_id}, ${task.step_slug},
        ${task.task_index}, ${task.attempt}, ${task.worker_id}, '1'::jsonb)`;
    }
    answer = canceller<{ result: { cancelled: number } }[]>`
      select sluice.cancel_runs('clw_batch', 'all of them') as result`.execute();
    await waitUntilBlocked(db.sql, pid);
  });
  const [{ result }] = await answer!;
  assert.equal(result.cancelled, 3);
  for (const runId of runIds) {
    assert.deepEqual(await taskStatuses(db.sql, runId), {
      "first:0": "completed",
      "second:0": "cancelled",
    });
    await assertNothingLive(db.sql, runId, "clw_batch");
  }
});
