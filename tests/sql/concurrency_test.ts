import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import {
  compileFlow,
  json,
  registerWorker,
  run,
  type Sql,
  startFlow,
  startTasks,
} from "./_fixtures.ts";

const SUPPORTED = [
  { flow_slug: "big", step_slug: "each" },
  { flow_slug: "big", step_slug: "sum" },
];

async function workLoop(sql: Sql, workerId: string, done: () => Promise<boolean>, seen: string[]) {
  while (!(await done())) {
    const messages = await sql<{ msg_id: string }[]>`select msg_id from pgmq.read('big', 30, 25)`;
    if (messages.length === 0) continue;
    const claim = await startTasks(sql, "big", messages.map((m) => m.msg_id), workerId, SUPPORTED);
    assert.equal(claim.outcome, "claimed");
    for (const task of claim.tasks) seen.push(`${task.step_slug}:${task.task_index}`);
    await sql`
      select sluice.complete_tasks(${
      json(
        sql,
        claim.tasks.map((t) => ({
          ...t,
          output: t.step_slug === "each" ? (t.input as number) * 2 : "sum",
        })),
      )
    }::jsonb)
    `;
  }
}

Deno.test("8 connections claim and complete a 1000-task map race-free, each task exactly once", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "big",
    steps: [{ slug: "each", type: "map" }, { slug: "sum", deps: ["each"] }],
  });
  const input = Array.from({ length: 1000 }, (_, i) => i);
  const runId = await startFlow(db.sql, "big", input);
  const done = async () => (await run(db.sql, runId)).status !== "started";
  const seen: string[] = [];
  await Promise.all(
    Array.from({ length: 8 }, async (_, i) => {
      const client = db.connect(1);
      const worker = await registerWorker(client, "big", "big", `big_${i}`);
      await workLoop(client, worker, done, seen);
    }),
  );
  const row = await run(db.sql, runId);
  assert.equal(row.status, "completed");
  assert.equal(seen.length, 1001, "1000 map tasks + 1 sum task, each claimed once");
  assert.equal(new Set(seen).size, 1001);
  const [each] = await db
    .sql`select output from sluice.step_states where run_id = ${runId} and step_slug = 'each'`;
  assert.deepEqual(each.output, input.map((i) => i * 2));
  const [attempts] = await db
    .sql`select max(attempts_count)::int as n from sluice.step_tasks where run_id = ${runId}`;
  assert.equal(attempts.n, 1);
});

Deno.test("concurrent sibling completions, failures and stalled recovery never deadlock", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "big",
    maxAttempts: 3,
    steps: [{ slug: "each", type: "map", timeout: 1 }, { slug: "sum", deps: ["each"] }],
  });
  const runIds: string[] = [];
  for (let i = 0; i < 10; i++) {
    runIds.push(await startFlow(db.sql, "big", Array.from({ length: 40 }, (_, j) => j)));
  }
  const worker = await registerWorker(db.sql, "big", "big");
  const messages = await db.sql<
    { msg_id: string }[]
  >`select msg_id from pgmq.read('big', 30, 1000)`;
  const claim = await startTasks(db.sql, "big", messages.map((m) => m.msg_id), worker, SUPPORTED);
  assert.equal(claim.tasks.length, 400);
  // Half the tasks look stalled, so recovery competes with completions for the same runs.
  await db.sql`
    update sluice.step_tasks set started_at = now() - interval '1 minute'
    where status = 'started' and task_index % 2 = 0
  `;
  const shards = Array.from({ length: 6 }, () => [] as typeof claim.tasks);
  claim.tasks.forEach((task, i) => shards[i % 6].push(task));
  const deadlocks: unknown[] = [];
  const clients = Array.from({ length: 8 }, () => db.connect(1));
  await Promise.all([
    ...shards.map(async (shard, i) => {
      const client = clients[i];
      for (const task of shard) {
        try {
          if (task.task_index % 7 === 0) {
            await client`select sluice.fail_task(${task.run_id}, ${task.step_slug}, ${task.task_index}, 'x', 0)`;
          } else {
            await client`select sluice.complete_task(${task.run_id}, ${task.step_slug}, ${task.task_index}, '1'::jsonb)`;
          }
        } catch (error) {
          deadlocks.push(error);
        }
      }
    }),
    ...[6, 7].map(async (i) => {
      for (let k = 0; k < 20; k++) {
        try {
          await clients[i]`select sluice.requeue_stalled_tasks()`;
        } catch (error) {
          deadlocks.push(error);
        }
      }
    }),
  ]);
  assert.deepEqual(deadlocks, []);
  const violations = await db.sql`
    select 1 from sluice.step_states ss join sluice.step_tasks t using (run_id, step_slug)
    where ss.status = 'completed' and t.status <> 'completed'
  `;
  assert.equal(violations.length, 0);
  const [live] = await db.sql`
    select count(*)::int as n from sluice.step_tasks t
    where t.status in ('queued', 'started') and t.run_id = any(${runIds})
      and not exists (select 1 from pgmq.q_big q where q.msg_id = t.message_id)
  `;
  assert.equal(live.n, 0, "every unfinished task still has its message");
});
