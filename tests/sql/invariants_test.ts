import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import {
  compileFlow,
  completeTask,
  drive,
  failTask,
  readAndClaim,
  registerWorker,
  run,
  startFlow,
} from "./_fixtures.ts";

const MIGRATIONS = new URL("../../supabase/migrations/", import.meta.url);

Deno.test("every data-changing CTE in the migrations is referenced later in its statement", async () => {
  const offenders: string[] = [];
  for await (const entry of Deno.readDir(MIGRATIONS)) {
    if (!entry.name.endsWith(".sql")) continue;
    const text = await Deno.readTextFile(new URL(entry.name, MIGRATIONS));
    const cte = /(\w+)\s+as\s+\(\s*(update|insert|delete)\b/gi;
    for (const match of text.matchAll(cte)) {
      const name = match[1];
      const end = text.indexOf(";", match.index!);
      const rest = text.slice(match.index! + match[0].length, end === -1 ? undefined : end);
      if (!new RegExp(`\\b(from|join)\\s+${name}\\b`, "i").test(rest)) {
        offenders.push(`${entry.name}: ${name}`);
      }
    }
  }
  assert.deepEqual(offenders, [], "an unreferenced data-changing CTE may be skipped by Postgres");
});

Deno.test("a task's flow_slug, queue_name and message_id cannot change", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "immut", steps: [{ slug: "a" }] });
  const runId = await startFlow(db.sql, "immut", {});
  for (const change of ["flow_slug = 'x'", "queue_name = 'x'", "message_id = message_id + 1"]) {
    await assert.rejects(
      db.sql.unsafe(`update sluice.step_tasks set ${change} where run_id = $1`, [runId]),
      /flow_slug, queue_name and message_id are immutable/,
      change,
    );
  }
  await db.sql`update sluice.step_tasks set error_message = 'fine' where run_id = ${runId}`;
});

Deno.test("every queue operation of a step-queued flow uses the task's stored queue, never the flow slug", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "Split",
    queueMode: "step",
    steps: [{ slug: "one" }, { slug: "two", deps: ["one"] }],
  });
  const queues = await db.sql`select queue_name from pgmq.list_queues() order by 1`;
  assert.deepEqual(queues.map((q) => q.queue_name), ["split__one", "split__two"]);
  const runId = await startFlow(db.sql, "Split", {});
  await drive(db.sql, "split__one", "Split", () => 1);
  await drive(db.sql, "split__two", "Split", () => 2);
  assert.equal((await run(db.sql, runId)).status, "completed");
  const tasks = await db
    .sql`select step_slug, queue_name from sluice.step_tasks where run_id = ${runId} order by 1`;
  assert.deepEqual(tasks.map((t) => t.queue_name), ["split__one", "split__two"]);
  const [archived] = await db.sql`
    select (select count(*) from pgmq.a_split__one)::int + (select count(*) from pgmq.a_split__two)::int as n
  `;
  assert.equal(archived.n, 2);
  const [noFlowQueue] = await db
    .sql`select count(*)::int as n from pgmq.meta where lower(queue_name) = 'split'`;
  assert.equal(noFlowQueue.n, 0);
});

Deno.test("a finished run never leaves a task queued or started or a live message, on any path", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "mixed",
    maxAttempts: 1,
    steps: [
      { slug: "fan", type: "map" },
      { slug: "gate", if: { go: true } },
      { slug: "sum", deps: ["fan"] },
    ],
  });
  const worker = await registerWorker(db.sql, "mixed", "mixed");
  const runs = [
    await startFlow(db.sql, "mixed", [1, 2, 3]),
    await startFlow(db.sql, "mixed", [4, 5]),
    await startFlow(db.sql, "mixed", []),
  ];
  let n = 0;
  for (let round = 0; round < 10; round++) {
    const tasks = await readAndClaim(db.sql, "mixed", worker, "mixed");
    for (const task of tasks) {
      if (n++ % 4 === 3) await failTask(db.sql, task, "unlucky");
      else await completeTask(db.sql, task, 1);
    }
  }
  const violations = await db.sql`
    select r.run_id, r.status, t.step_slug, t.task_index, t.status as task_status
    from sluice.runs r join sluice.step_tasks t using (run_id)
    where r.status in ('completed', 'failed') and t.status in ('queued', 'started')
  `;
  assert.deepEqual([...violations], []);
  const finished = await db
    .sql`select count(*)::int as n from sluice.runs where status <> 'started' and run_id = any(${runs})`;
  assert.equal(finished[0].n, 3);
  const [live] = await db.sql`
    select count(*)::int as n from pgmq.q_mixed q join sluice.step_tasks t on t.message_id = q.msg_id
    join sluice.runs r using (run_id) where r.status <> 'started'
  `;
  assert.equal(live.n, 0);
});
