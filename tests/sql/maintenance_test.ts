import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import { latch, waitUntil } from "../_support.ts";
import {
  compileFlow,
  completeTask,
  drive,
  read,
  readAndClaim,
  registerWorker,
  run,
  type Sql,
  startFlow,
} from "./_fixtures.ts";

Deno.test("delete_flow_and_data() removes the flow, its runs, private queues and registry rows", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "gone",
    queueMode: "step",
    steps: [{ slug: "a" }, { slug: "b", deps: ["a"] }],
  });
  await compileFlow(db.sql, { slug: "kept", steps: [{ slug: "a" }] });
  await startFlow(db.sql, "gone", {});
  await startFlow(db.sql, "kept", {});
  await db.sql`select sluice.delete_flow_and_data('gone', force => true)`;
  const [row] = await db.sql`
    select (select count(*) from sluice.flows where flow_slug = 'gone')::int as flows,
      (select count(*) from sluice.runs where flow_slug = 'gone')::int as runs,
      (select count(*) from sluice.queues where owner_flow_slug = 'gone')::int as registry,
      (select count(*) from pgmq.meta where queue_name like 'gone%')::int as queues,
      (select count(*) from sluice.aliases where flow_slug = 'gone')::int as aliases
  `;
  assert.deepEqual({ ...row }, { flows: 0, runs: 0, registry: 0, queues: 0, aliases: 0 });
  assert.equal((await read(db.sql, "kept")).length, 1, "other flows are untouched");
});

Deno.test("delete_flow_and_data() skips a private queue already dropped by hand", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "gone",
    queueMode: "step",
    steps: [{ slug: "a" }, { slug: "b", deps: ["a"] }],
  });
  // PGMQ 1.5.1's drop_queue raises for a missing queue; deleting the flow must not.
  await db.sql`select pgmq.drop_queue('gone__a')`;
  await db.sql`select sluice.delete_flow_and_data('gone')`;
  const [row] = await db.sql`
    select (select count(*) from sluice.flows)::int as flows,
      (select count(*) from sluice.queues)::int as registry,
      (select count(*) from pgmq.meta)::int as queues
  `;
  assert.deepEqual({ ...row }, { flows: 0, registry: 0, queues: 0 });
});

Deno.test("delete_flow_and_data() names an unknown flow", async () => {
  await using db = await freshDatabase();
  await assert.rejects(
    db.sql`select sluice.delete_flow_and_data('nope')`,
    /Cannot delete flow "nope": no such flow/,
  );
});

Deno.test("prune_data_older_than() removes finished runs past retention with their archived messages", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "old", steps: [{ slug: "a" }] });
  const oldRun = await startFlow(db.sql, "old", {});
  await drive(db.sql, "old", "old", () => 1);
  const newRun = await startFlow(db.sql, "old", {});
  await drive(db.sql, "old", "old", () => 2);
  const openRun = await startFlow(db.sql, "old", {});
  await db
    .sql`update sluice.runs set completed_at = now() - interval '8 days', started_at = now() - interval '8 days' where run_id = ${oldRun}`;

  const [{ result }] = await db.sql`call sluice.prune_data_older_than(interval '7 days')`;
  assert.deepEqual(result, { runs: 1, workers: 0, signals: 0 });
  assert.equal(await run(db.sql, oldRun), undefined);
  assert.equal((await run(db.sql, newRun)).status, "completed");
  assert.equal((await run(db.sql, openRun)).status, "started");
  const [archived] = await db.sql`select count(*)::int as n from pgmq.a_old`;
  assert.equal(archived.n, 1, "only the pruned run's archived message is deleted");
  await assert.rejects(
    db.sql`call sluice.prune_data_older_than(interval '-1 day')`,
    /retention must be a non-negative interval/,
  );
  await assert.rejects(
    db.sql`call sluice.prune_data_older_than(interval '1 day', 0)`,
    /batch_size must be a positive integer, got 0/,
  );
});

/** Finishes `count` one-step runs of flow `flow`, dated `days` ago; returns their ids. */
async function oldRuns(sql: Sql, flow: string, count: number, days: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push(await startFlow(sql, flow, { i }));
  await drive(sql, flow, flow, () => "done");
  await sql`
    update sluice.runs set started_at = now() - make_interval(days => ${days}),
      completed_at = now() - make_interval(days => ${days})
    where run_id = any (${ids}::uuid[])
  `;
  return ids;
}

Deno.test("prune_data_older_than() deletes in batches: every old run goes, live and recent runs stay", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "batched", steps: [{ slug: "a" }] });
  const old = await oldRuns(db.sql, "batched", 25, 10);
  const recent = await startFlow(db.sql, "batched", {});
  await drive(db.sql, "batched", "batched", () => "done");
  const open = await startFlow(db.sql, "batched", {});

  // 25 runs in batches of 4: seven batches, the last one short.
  const [{ result }] = await db.sql`call sluice.prune_data_older_than(interval '7 days', 4)`;
  assert.deepEqual(result, { runs: 25, workers: 0, signals: 0 });
  const [left] = await db.sql`
    select (select count(*) from sluice.runs where run_id = any (${old}::uuid[]))::int as runs,
      (select count(*) from sluice.step_tasks where run_id = any (${old}::uuid[]))::int as tasks,
      (select count(*) from pgmq.a_batched)::int as archived
  `;
  assert.deepEqual({ ...left }, { runs: 0, tasks: 0, archived: 1 });
  assert.equal((await run(db.sql, recent)).status, "completed");
  assert.equal((await run(db.sql, open)).status, "started");
  assert.equal((await read(db.sql, "batched")).length, 1, "the open run's message is untouched");
});

Deno.test("prune_data_older_than() commits each batch: claims run and see progress while it is held up", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "held", steps: [{ slug: "a" }] });
  const old = await oldRuns(db.sql, "held", 12, 10);
  const workerId = await registerWorker(db.sql, "held", "held");
  await db.sql`select sluice.stop_worker(${workerId})`;
  await db.sql`
    update sluice.workers set stopped_at = now() - interval '10 days' where worker_id = ${workerId}
  `;

  // Another session holds the stopped worker's row: the prune deletes the runs batch by batch,
  // then waits on that row in its last step.
  const holder = db.connect(1);
  const pruner = db.connect(1);
  const claimer = db.connect(1);
  const released = latch();
  const locked = latch();
  const holding = holder.begin(async (tx) => {
    await tx`select 1 from sluice.workers where worker_id = ${workerId} for update`;
    locked.resolve();
    await released.promise;
  });
  await locked.promise;
  const [{ pid }] = await pruner`select pg_backend_pid() as pid`;
  const pruning = pruner`call sluice.prune_data_older_than(interval '7 days', 5)`.execute();
  try {
    await waitUntil(async () => {
      const [{ waiting }] = await claimer`
        select wait_event_type = 'Lock' as waiting from pg_stat_activity where pid = ${pid}
      `;
      return waiting;
    }, "the prune to wait for the held worker row");
    // Every batch is committed already, though the prune has not returned.
    const [{ n }] = await claimer`
      select count(*)::int as n from sluice.runs where run_id = any (${old}::uuid[])
    `;
    assert.equal(n, 0);
    // A claim and a completion on the same tables go through meanwhile.
    const live = await startFlow(claimer, "held", {});
    const claimWorker = await registerWorker(claimer, "held", "held", "held_claimer");
    const [task] = await readAndClaim(claimer, "held", claimWorker, "held");
    assert.equal(task.run_id, live);
    assert.equal(await completeTask(claimer, task, "ok"), "completed");
    assert.equal((await run(claimer, live)).status, "completed");
  } finally {
    released.resolve();
    await holding;
  }
  const [{ result }] = await pruning;
  assert.deepEqual(result, { runs: 12, workers: 1, signals: 0 });
});

Deno.test("delete_flow_and_data() refuses a flow with active runs or live workers unless forced, naming them", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "busy", steps: [{ slug: "a" }] });
  await startFlow(db.sql, "busy", {});
  await startFlow(db.sql, "busy", {});
  await assert.rejects(
    db.sql`select sluice.delete_flow_and_data('busy')`,
    /Cannot delete flow "busy": 2 active run\(s\)/,
  );
  await db
    .sql`update sluice.runs set status = 'completed', completed_at = now() where flow_slug = 'busy'`;
  const workerId = await registerWorker(db.sql, "busy", "busy", "busy-fn");
  await assert.rejects(
    db.sql`select sluice.delete_flow_and_data('busy')`,
    (error: Error) => {
      assert.match(error.message, /Cannot delete flow "busy": live workers serve it/);
      assert.ok(error.message.includes(`${workerId} (busy-fn)`), error.message);
      return true;
    },
  );
  const [{ runs }] = await db.sql`
    select count(*)::int as runs from sluice.runs where flow_slug = 'busy'`;
  assert.equal(runs, 2, "nothing was deleted");
  await db.sql`select sluice.delete_flow_and_data('busy', force => true)`;
  const [{ flows }] = await db.sql`
    select count(*)::int as flows from sluice.flows where flow_slug = 'busy'`;
  assert.equal(flows, 0);
});
