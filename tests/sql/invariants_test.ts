import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import {
  compileFlow,
  completeTask,
  drive,
  failTask,
  liveMessages,
  readAndClaim,
  registerWorker,
  run,
  type Sql,
  startFlow,
  stepStatuses,
  taskStatuses,
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

Deno.test("a finished run never leaves a task queued or started or a live message: maps, a condition and failed last attempts", async () => {
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

/** Every finished run among `runs`: no task queued or started, no live message of its tasks. */
async function assertSettled(sql: Sql, runs: string[]): Promise<void> {
  for (const runId of runs) {
    const { status } = await run(sql, runId);
    assert.notEqual(status, "started", `run ${runId} finished`);
    const open = Object.entries(await taskStatuses(sql, runId))
      .filter(([, task]) => task === "queued" || task === "started");
    assert.deepEqual(open, [], `run ${runId} (${status}) left tasks open`);
    assert.equal(await liveMessages(sql, runId), 0, `run ${runId} (${status}) left live messages`);
  }
}

Deno.test("a finished run never leaves a task queued or started or a live message: retries, skip-cascade, stall recovery and cancellation", async () => {
  await using db = await freshDatabase();
  const claim = async (flow: string, worker: string) => {
    // Retry and stall delays are not waited for: every message of the queue is visible now.
    await db.sql`update ${db.sql(`pgmq.q_${flow}`)} set vt = clock_timestamp()`;
    return await readAndClaim(db.sql, flow, worker, flow);
  };

  // Retry: every map task fails its first attempt and completes its second.
  await compileFlow(db.sql, {
    slug: "inv_retry",
    maxAttempts: 2,
    baseDelay: 1,
    steps: [{ slug: "fan", type: "map" }, { slug: "sum", deps: ["fan"] }],
  });
  const retryWorker = await registerWorker(db.sql, "inv_retry", "inv_retry");
  const retried = await startFlow(db.sql, "inv_retry", [1, 2, 3]);
  for (let round = 0; round < 10; round++) {
    for (const task of await claim("inv_retry", retryWorker)) {
      if (task.attempt === 1) assert.equal(await failTask(db.sql, task, "flaky"), "retried");
      else await completeTask(db.sql, task, 1);
    }
  }
  assert.equal((await run(db.sql, retried)).status, "completed");
  const attempts = await db.sql`
    select attempts_count from sluice.step_tasks where run_id = ${retried} and step_slug = 'fan'`;
  assert.deepEqual(attempts.map((t) => t.attempts_count), [2, 2, 2], "each map task retried");

  // Skip-cascade: an exhausted optional step skips itself and its dependant; an unmet condition
  // skips another; the run completes.
  await compileFlow(db.sql, {
    slug: "inv_skip",
    maxAttempts: 1,
    steps: [
      { slug: "a" },
      { slug: "opt", deps: ["a"], whenExhausted: "skip-cascade" },
      { slug: "after", deps: ["opt"] },
      { slug: "gate", if: { go: true } },
      { slug: "fin", deps: ["a"] },
    ],
  });
  const skipWorker = await registerWorker(db.sql, "inv_skip", "inv_skip");
  const skipped = await startFlow(db.sql, "inv_skip", { go: false });
  for (let round = 0; round < 10; round++) {
    for (const task of await claim("inv_skip", skipWorker)) {
      if (task.step_slug === "opt") await failTask(db.sql, task, "optional broke");
      else await completeTask(db.sql, task, 1);
    }
  }
  assert.equal((await run(db.sql, skipped)).status, "completed");
  const skipStates = await stepStatuses(db.sql, skipped);
  assert.deepEqual(
    [skipStates.opt, skipStates.after, skipStates.gate, skipStates.fin],
    ["skipped", "skipped", "skipped", "completed"],
  );

  // Stall recovery: a claimed attempt goes silent past its timeout, is requeued, and the next
  // claim completes it.
  await compileFlow(db.sql, {
    slug: "inv_stall",
    maxAttempts: 2,
    steps: [{ slug: "a", timeout: 5 }, { slug: "b", deps: ["a"] }],
  });
  const stallWorker = await registerWorker(db.sql, "inv_stall", "inv_stall");
  const stalled = await startFlow(db.sql, "inv_stall", {});
  assert.equal((await claim("inv_stall", stallWorker)).length, 1);
  await db.sql`
    update sluice.step_tasks set started_at = now() - interval '40 seconds'
    where run_id = ${stalled} and status = 'started'`;
  const [{ requeued }] = await db.sql`select sluice.requeue_stalled_tasks() as requeued`;
  assert.equal(requeued, 1, "the silent attempt was requeued");
  for (let round = 0; round < 10; round++) {
    for (const task of await claim("inv_stall", stallWorker)) {
      await completeTask(db.sql, task, 1);
    }
  }
  assert.equal((await run(db.sql, stalled)).status, "completed");

  // Cancellation: one map task fails its last attempt while its sibling is running; the run
  // fails, the sibling is cancelled, and its late completion changes nothing.
  await compileFlow(db.sql, {
    slug: "inv_cancel",
    maxAttempts: 1,
    steps: [{ slug: "fan", type: "map" }, { slug: "sum", deps: ["fan"] }],
  });
  const cancelWorker = await registerWorker(db.sql, "inv_cancel", "inv_cancel");
  const cancelled = await startFlow(db.sql, "inv_cancel", [1, 2]);
  const [first, second] = await claim("inv_cancel", cancelWorker);
  assert.equal(await failTask(db.sql, first, "fatal"), "failed");
  await completeTask(db.sql, second, 1);
  assert.equal((await run(db.sql, cancelled)).status, "failed");
  assert.deepEqual(
    Object.values(await taskStatuses(db.sql, cancelled)).sort(),
    ["cancelled", "failed"],
  );

  await assertSettled(db.sql, [retried, skipped, stalled, cancelled]);
});
