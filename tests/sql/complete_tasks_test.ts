import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import {
  compileFlow,
  completeTask,
  drive,
  json,
  liveMessages,
  readAndClaim,
  registerWorker,
  run,
  startFlow,
  stepStatuses,
  taskStatuses,
} from "./_fixtures.ts";

Deno.test("complete_task() walks a linear flow to a completed run whose output is the leaf output", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "linear",
    steps: [{ slug: "a" }, { slug: "b", deps: ["a"] }, { slug: "c", deps: ["b"] }],
  });
  const runId = await startFlow(db.sql, "linear", { n: 1 });
  const seen: unknown[] = [];
  await drive(db.sql, "linear", "linear", (task) => {
    seen.push([task.step_slug, task.input]);
    return { from: task.step_slug };
  });
  assert.deepEqual(seen, [
    ["a", { n: 1 }],
    ["b", { a: { from: "a" } }],
    ["c", { b: { from: "b" } }],
  ]);
  const row = await run(db.sql, runId);
  assert.equal(row.status, "completed");
  assert.deepEqual(row.output, { c: { from: "c" } });
  assert.equal(await liveMessages(db.sql, runId), 0);
});

Deno.test("complete_tasks() aggregates map outputs by task index, whatever the completion order", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "mapped",
    steps: [
      { slug: "each", type: "map" },
      { slug: "twice", type: "map", deps: ["each"], mapSource: "each" },
    ],
  });
  const worker = await registerWorker(db.sql, "mapped", "mapped");
  // Every order in which three tasks can complete, one run each.
  const orders = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]];
  for (const order of orders) {
    const ordered = await startFlow(db.sql, "mapped", [1, 2, 3]);
    const tasks = await readAndClaim(db.sql, "mapped", worker, "mapped");
    assert.deepEqual(tasks.map((t) => t.input), [1, 2, 3]);
    for (const index of order) {
      const task = tasks.find((t) => t.task_index === index)!;
      await completeTask(db.sql, task, (task.input as number) * 10);
    }
    const [each] = await db
      .sql`select output from sluice.step_states where run_id = ${ordered} and step_slug = 'each'`;
    assert.deepEqual(each.output, [10, 20, 30], `completed in order ${order}`);
    // The run's second step, so that the next claim holds the next run's tasks only.
    for (const task of await readAndClaim(db.sql, "mapped", worker, "mapped")) {
      await completeTask(db.sql, task, 0);
    }
    assert.equal((await run(db.sql, ordered)).status, "completed");
  }
  const runId = await startFlow(db.sql, "mapped", [1, 2, 3]);
  const first = await readAndClaim(db.sql, "mapped", worker, "mapped");
  for (const task of first) await completeTask(db.sql, task, (task.input as number) * 10);

  const second = await readAndClaim(db.sql, "mapped", worker, "mapped");
  assert.deepEqual(second.map((t) => t.input), [10, 20, 30]);
  const [applied] = await db.sql`
    select sluice.complete_tasks(${
    json(db.sql, second.map((t) => ({ ...t, output: (t.input as number) + 1 })))
  }::jsonb) as outcome
  `;
  assert.deepEqual(applied.outcome.completed, 3);
  assert.deepEqual(applied.outcome.stale, []);
  assert.deepEqual(
    applied.outcome.runs_completed.map((r: { run_id: string }) => r.run_id),
    [runId],
    "the batch that completed the last step names the run it finished",
  );
  assert.deepEqual((await run(db.sql, runId)).output, { twice: [11, 21, 31] });
});

Deno.test("an empty map completes with [] at once and the chain behind it completes in the same transaction", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "empties",
    steps: [
      { slug: "each", type: "map" },
      { slug: "again", type: "map", deps: ["each"], mapSource: "each" },
    ],
  });
  const runId = await startFlow(db.sql, "empties", []);
  const row = await run(db.sql, runId);
  assert.equal(row.status, "completed");
  assert.deepEqual(row.output, { again: [] });
  assert.deepEqual(await stepStatuses(db.sql, runId), { each: "completed", again: "completed" });
  assert.deepEqual(await taskStatuses(db.sql, runId), {});
});

Deno.test("complete_task() refuses a non-array output feeding a map step and writes nothing", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "feeder",
    steps: [{ slug: "list" }, { slug: "each", type: "map", deps: ["list"], mapSource: "list" }],
  });
  const runId = await startFlow(db.sql, "feeder", {});
  const worker = await registerWorker(db.sql, "feeder", "feeder");
  const [task] = await readAndClaim(db.sql, "feeder", worker, "feeder");
  await assert.rejects(
    completeTask(db.sql, task, { not: "an array" }),
    /map step "each" maps over its output, which must be an array, got object/,
  );
  assert.deepEqual(await taskStatuses(db.sql, runId), { "list:0": "started" });
  assert.equal(await liveMessages(db.sql, runId), 1);
});

Deno.test("complete_task() names an unknown task and writes nothing of its batch", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "known", steps: [{ slug: "a" }] });
  const runId = await startFlow(db.sql, "known", {});
  const worker = await registerWorker(db.sql, "known", "known");
  const [task] = await readAndClaim(db.sql, "known", worker, "known");
  const batch = [
    { ...task, output: 1 },
    { ...task, run_id: runId, step_slug: "zzz", task_index: 0, output: 1 },
  ];
  await assert.rejects(
    db.sql`select sluice.complete_tasks(${json(db.sql, batch)}::jsonb)`,
    new RegExp(`Cannot complete task \\(run ${runId}, step "zzz", index 0\\): no such task`),
  );
  assert.deepEqual(await taskStatuses(db.sql, runId), { "a:0": "started" });
});

Deno.test("complete_task() of a task that is not started is stale: no change, returns 'stale'", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "late", steps: [{ slug: "a" }, { slug: "b" }] });
  const runId = await startFlow(db.sql, "late", {});
  const worker = await registerWorker(db.sql, "late", "late");
  const [a] = await readAndClaim(db.sql, "late", worker, "late");
  assert.equal(await completeTask(db.sql, a, 1), "completed");
  assert.equal(await completeTask(db.sql, a, 2), "stale", "a duplicate report changes nothing");
  const queued = {
    ...a,
    run_id: runId,
    step_slug: a.step_slug === "a" ? "b" : "a",
    task_index: 0,
    attempt: 0,
  };
  await db
    .sql`update sluice.step_tasks set status = 'queued', started_at = null where run_id = ${runId} and step_slug = ${queued.step_slug}`;
  assert.equal(await completeTask(db.sql, queued, 3), "stale", "a queued task cannot be completed");
  const [row] = await db
    .sql`select output from sluice.step_tasks where run_id = ${runId} and step_slug = ${a.step_slug}`;
  assert.equal(row.output, 1);
});

Deno.test("complete_tasks() requires each result's fencing token and writes nothing of its batch without one", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "token", steps: [{ slug: "a" }] });
  const runId = await startFlow(db.sql, "token", {});
  const worker = await registerWorker(db.sql, "token", "token");
  const [task] = await readAndClaim(db.sql, "token", worker, "token");
  const batch = [{ ...task, output: 1 }, { ...task, attempt: undefined, output: 2 }];
  await assert.rejects(
    db.sql`select sluice.complete_tasks(${json(db.sql, batch)}::jsonb)`,
    new RegExp(
      `Cannot complete task \\(run ${runId}, step "a", index 0\\): attempt and worker_id are required`,
    ),
  );
  assert.deepEqual(await taskStatuses(db.sql, runId), { "a:0": "started" });
});
