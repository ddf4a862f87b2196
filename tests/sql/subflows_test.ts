// Subflows at the SQL level under real concurrency (docs/subflows.md): connections race to
// complete a wide map subflow's children, a cancel races those completions, and a stale attempt
// of the dependency races its live one. Exactly one child per element, no deadlock, no live
// descendant of an ended parent.
import assert from "node:assert/strict";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import {
  compile,
  definition,
  json,
  read,
  registerWorker,
  run,
  type Sql,
  startFlow,
  startTasks,
  supportedPairs,
} from "./_fixtures.ts";

/** Compiles "kid" (one step) and "par": load -> map subflow "kids" over kid -> "after". */
async function compileTree(sql: Sql): Promise<void> {
  assert.equal(
    (await compile(
      sql,
      definition({
        slug: "kid",
        steps: [{ slug: "work" }],
      }),
    )).outcome,
    "compiled",
  );
  const parent = definition({
    slug: "par",
    steps: [{ slug: "load" }, { slug: "kids", deps: ["load"] }, { slug: "after", deps: ["kids"] }],
  });
  const steps = parent.steps.map((step) =>
    step.step_slug === "kids"
      ? { ...step, step_type: "subflow", wait: { subflow: { flow: "kid", by: "slug", map: true } } }
      : step
  );
  assert.equal((await compile(sql, { ...parent, steps } as typeof parent)).outcome, "compiled");
}

/** Claims and completes what is visible on `queue` until `done`; the load step sends `width` children. */
async function workLoop(
  sql: Sql,
  queue: string,
  workerId: string,
  width: number,
  done: () => Promise<boolean>,
): Promise<number> {
  const supported = [
    ...await supportedPairs(sql, "kid"),
    ...await supportedPairs(sql, "par"),
  ];
  let completed = 0;
  while (!(await done())) {
    const messages = await read(sql, queue, 10);
    if (messages.length === 0) continue;
    const claim = await startTasks(sql, queue, messages.map((m) => m.msg_id), workerId, supported);
    if (claim.outcome !== "claimed") throw new Error(JSON.stringify(claim));
    if (claim.tasks.length === 0) continue;
    const results = claim.tasks.map((t) => ({
      run_id: t.run_id,
      step_slug: t.step_slug,
      task_index: t.task_index,
      attempt: t.attempt,
      worker_id: t.worker_id,
      output: t.flow_slug === "kid" ? (t.input as { i: number }).i * 2 : t.step_slug,
      ...(t.step_slug === "load"
        ? {
          waits: [{
            step_slug: "kids",
            input: Array.from({ length: width }, (_, i) => ({ i })),
          }],
        }
        : {}),
    }));
    const [row] = await sql`select sluice.complete_tasks(${json(sql, results)}::jsonb) as r`;
    completed += row.r.completed;
  }
  return completed;
}

async function children(db: TestDatabase, parent: string) {
  return await db.sql<{ i: number; status: string; output: unknown }[]>`
    select parent_task_index as i, status, output from sluice.runs
    where parent_run_id = ${parent} order by parent_task_index`;
}

Deno.test("8 connections race to complete the 200 children of a map subflow: each child once, the parent step completes once, in order", async () => {
  await using db = await freshDatabase();
  await compileTree(db.sql);
  const runId = await startFlow(db.sql, "par", {});
  const done = async () => (await run(db.sql, runId)).status !== "started";
  const counts = await Promise.all(Array.from({ length: 8 }, async (_, n) => {
    const client = db.connect(1);
    const queue = n % 2 === 0 ? "kid" : "par";
    const worker = await registerWorker(client, queue, queue === "kid" ? "kid" : "par", `w_${n}`);
    return await workLoop(client, queue, worker, 200, done);
  }));
  assert.equal((await run(db.sql, runId)).status, "completed");
  // load, after, and 200 children's work: every task exactly once.
  assert.equal(counts.reduce((a, b) => a + b, 0), 202);
  const kids = await children(db, runId);
  assert.deepEqual(kids.map((k) => k.i), Array.from({ length: 200 }, (_, i) => i));
  assert.ok(kids.every((k) => k.status === "completed"));
  const [state] = await db.sql`
    select output from sluice.step_states where run_id = ${runId} and step_slug = 'kids'`;
  assert.deepEqual(state.output, Array.from({ length: 200 }, (_, i) => ({ work: i * 2 })));
});

Deno.test("cancelling the parent while 4 connections complete its children: no deadlock, no live child, no queued task", async () => {
  await using db = await freshDatabase();
  await compileTree(db.sql);
  const runId = await startFlow(db.sql, "par", {});
  let stop = false;
  const done = () => Promise.resolve(stop);
  const loops = Array.from({ length: 4 }, async (_, n) => {
    const client = db.connect(1);
    const queue = n === 0 ? "par" : "kid";
    const worker = await registerWorker(client, queue, queue, `c_${n}`);
    return await workLoop(client, queue, worker, 300, done);
  });
  // Cancel once some children completed, while the others are being completed.
  await (async () => {
    for (;;) {
      const [{ n }] = await db.sql<{ n: number }[]>`
        select count(*)::integer as n from sluice.runs
        where parent_run_id = ${runId} and status = 'completed'`;
      if (n >= 20) return;
    }
  })();
  const [cancel] = await db.sql`select sluice.cancel_run(${runId}, 'racing') as r`;
  assert.equal(cancel.r.outcome, "cancelled");
  stop = true;
  await Promise.all(loops);

  const kids = await children(db, runId);
  assert.equal(kids.length, 300);
  assert.ok(kids.some((k) => k.status === "completed"));
  assert.ok(kids.some((k) => k.status === "cancelled"));
  assert.ok(kids.every((k) => k.status === "completed" || k.status === "cancelled"));
  const [{ live }] = await db.sql<{ live: number }[]>`
    select count(*)::integer as live from sluice.step_tasks t
    join sluice.runs r on r.run_id = t.run_id
    where r.parent_run_id = ${runId} and t.status in ('queued', 'started')`;
  assert.equal(live, 0);
});

Deno.test("a stale and a live attempt of the subflow's dependency complete at once: only the live one's children exist", async () => {
  await using db = await freshDatabase();
  await compileTree(db.sql);
  const runId = await startFlow(db.sql, "par", {});
  const stale = await registerWorker(db.sql, "par", "par", "stale");
  const [first] = await read(db.sql, "par");
  const claimA = await startTasks(db.sql, "par", [first.msg_id], stale, [
    { flow_slug: "par", step_slug: "load" },
  ]);
  // Its attempt stalls: recovery requeues the task and another worker claims attempt 2.
  await db.sql`update sluice.step_tasks set started_at = now() - interval '1 hour'
    where run_id = ${runId} and step_slug = 'load'`;
  await db.sql`select sluice.requeue_stalled_tasks()`;
  const live = await registerWorker(db.sql, "par", "par", "live");
  const [second] = await read(db.sql, "par");
  const claimB = await startTasks(db.sql, "par", [second.msg_id], live, [
    { flow_slug: "par", step_slug: "load" },
  ]);
  assert.deepEqual(claimB.tasks.map((t) => t.attempt), [2]);

  const complete = (sql: Sql, task: typeof claimA.tasks[0], width: number) =>
    sql`select sluice.complete_tasks(${
      json(sql, [{
        run_id: task.run_id,
        step_slug: task.step_slug,
        task_index: task.task_index,
        attempt: task.attempt,
        worker_id: task.worker_id,
        output: "load",
        waits: [{ step_slug: "kids", input: Array.from({ length: width }, (_, i) => ({ i })) }],
      }])
    }::jsonb) as r`;
  const [a, b] = await Promise.all([
    complete(db.connect(1), claimA.tasks[0], 7),
    complete(db.connect(1), claimB.tasks[0], 3),
  ]);
  assert.deepEqual([a[0].r.completed, b[0].r.completed], [0, 1]);
  assert.deepEqual((await children(db, runId)).map((k) => k.i), [0, 1, 2]);
});

Deno.test("a subflow's child input, depth and width limits are checked where the children start", async () => {
  await using db = await freshDatabase();
  await compileTree(db.sql);
  await db.sql`update sluice.flows set opt_max_map_tasks = 2 where flow_slug = 'par'`;
  const runId = await startFlow(db.sql, "par", {});
  const worker = await registerWorker(db.sql, "par", "par", "limits");
  const [message] = await read(db.sql, "par");
  const claim = await startTasks(db.sql, "par", [message.msg_id], worker, [
    { flow_slug: "par", step_slug: "load" },
  ]);
  const task = claim.tasks[0];
  const result = (input: unknown) => [{
    run_id: task.run_id,
    step_slug: task.step_slug,
    task_index: task.task_index,
    attempt: task.attempt,
    worker_id: task.worker_id,
    output: "load",
    waits: [{ step_slug: "kids", ...(input === undefined ? {} : { input }) }],
  }];
  await assert.rejects(
    db.sql`select sluice.complete_tasks(${json(db.sql, result(undefined))}::jsonb)`,
    /the entry of subflow step "kids" must carry its child input as "input"/,
  );
  await assert.rejects(
    db.sql`select sluice.complete_tasks(${json(db.sql, result({ i: 1 }))}::jsonb)`,
    /Cannot start map subflow step "kids" of run .*: its child input must be an array, got object/,
  );
  await assert.rejects(
    db.sql`select sluice.complete_tasks(${json(db.sql, result([{}, {}, {}]))}::jsonb)`,
    (error: { code?: string; message: string }) =>
      error.code === "SLL01" && /3 elements, more than the limit of 2 children/.test(error.message),
  );
  // A run as deep as the limit allows (its recorded parent is itself: only the depth matters
  // here) cannot start children one level deeper.
  await db.sql`update sluice.runs set parent_run_id = run_id, parent_step_slug = 'x',
    parent_task_index = 0, depth = sluice.max_subflow_depth() where run_id = ${runId}`;
  await assert.rejects(
    db.sql`select sluice.complete_tasks(${json(db.sql, result([{}]))}::jsonb)`,
    (error: { code?: string; message: string }) =>
      error.code === "SLL01" &&
      /its child would be 9 levels deep, more than the limit of 8 \(max_subflow_depth\)/.test(
        error.message,
      ),
  );
  // Nothing was written by the refused completions: no run but the parent.
  const [{ runs }] = await db.sql<
    { runs: number }[]
  >`select count(*)::integer as runs from sluice.runs`;
  assert.equal(runs, 1);
  assert.equal((await run(db.sql, runId)).status, "started");
});
