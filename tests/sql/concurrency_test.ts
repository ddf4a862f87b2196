import assert from "node:assert/strict";
import { readAndClaim } from "../../src/db/worker_queries.ts";
import { freshDatabase } from "../_db.ts";
import { waitUntil } from "../_support.ts";
import {
  compileFlow,
  completeTask,
  failTask,
  json,
  readAndClaim as readAndClaimFixture,
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
            await failTask(client, task, "x", 0);
          } else {
            await completeTask(client, task, 1);
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

/** Deadlocks PostgreSQL counted in this database (every backend that found one has exited). */
async function deadlocks(sql: Sql): Promise<number> {
  await sql`select pg_stat_clear_snapshot()`;
  const [row] = await sql`
    select deadlocks::int as n from pg_stat_database where datname = current_database()`;
  return row.n;
}

/** Ends clients and waits until their backends are gone, so their statistics are flushed. */
async function endClients(sql: Sql, clients: Sql[], pids: number[]): Promise<void> {
  await Promise.all(clients.map((client) => client.end()));
  await waitUntil(async () => {
    const [row] = await sql`
      select count(*)::int as n from pg_stat_activity where pid = any(${pids}::int[])`;
    return row.n === 0;
  }, "the test's backends to exit");
}

Deno.test("the worker's fused read-and-claim never deadlocks with completion, failure or recovery of the task it reads", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "fused",
    maxAttempts: 1000,
    steps: [{ slug: "a", timeout: 1 }],
  });
  const supported = [{ flow_slug: "fused", step_slug: "a" }];
  const reporter = await registerWorker(db.sql, "fused", "fused", "fused_reporter");
  const claimerId = await registerWorker(db.sql, "fused", "fused", "fused_claimer");
  const before = await deadlocks(db.sql);
  const holder = db.connect(1);
  const claimer = db.connect(1);
  const pids = [
    (await holder`select pg_backend_pid() as pid`)[0].pid,
    (await claimer`select pg_backend_pid() as pid`)[0].pid,
  ];
  const errors: unknown[] = [];
  const operations = ["complete", "fail", "recover"] as const;
  for (let round = 0; round < 9; round++) {
    const operation = operations[round % operations.length];
    // A started task whose message is visible again: its visibility ran out, so a worker's read
    // picks the message while a completion, failure or recovery of the task is under way.
    const runId = await startFlow(db.sql, "fused", {});
    const [task] = await readAndClaimFixture(db.sql, "fused", reporter, "fused");
    await db.sql`update pgmq.q_fused set vt = clock_timestamp() where msg_id = ${task.message_id}`;
    await db.sql`
      update sluice.step_tasks set started_at = now() - interval '40 seconds'
      where run_id = ${runId}`;
    try {
      await holder.begin(async (tx) => {
        // The locks the report (or recovery) takes before it reaches the message.
        await tx`select 1 from sluice.runs where run_id = ${runId} for update`;
        await tx`select 1 from sluice.step_states where run_id = ${runId} for update`;
        await tx`select 1 from sluice.step_tasks where run_id = ${runId} for update`;
        let settled = false;
        const claim = readAndClaim(claimer, {
          queue: "fused",
          visibilityTimeout: 30,
          quantity: 10,
          workerId: claimerId,
          supported,
          mode: { kind: "read" },
        }).finally(() => settled = true);
        claim.catch(() => {});
        // The claim has read (and locked) the message: it either finished or waits for a lock.
        await waitUntil(async () => {
          if (settled) return true;
          const [row] = await db.sql`
            select wait_event_type = 'Lock' as waiting from pg_stat_activity where pid = ${
            pids[1]
          }`;
          return row?.waiting;
        }, "the claim to finish or wait");
        const { run_id, step_slug, task_index, attempt, worker_id } = task;
        if (operation === "complete") {
          await tx`select sluice.complete_task(
            ${run_id}, ${step_slug}, ${task_index}, ${attempt}, ${worker_id}, '1'::jsonb)`;
        } else if (operation === "fail") {
          await tx`select sluice.fail_task(
            ${run_id}, ${step_slug}, ${task_index}, ${attempt}, ${worker_id}, 'boom', 0)`;
        } else {
          await tx`select sluice.requeue_stalled_tasks()`;
        }
        const result = await claim;
        assert.deepEqual(result.tasks, [], "the task being reported is not claimed");
        assert.deepEqual(result.duplicates, [task.message_id], "it is a benign duplicate");
      });
    } catch (error) {
      errors.push(error);
    }
    await db.sql`update sluice.runs set status = 'completed', completed_at = now()
      where run_id = ${runId} and status = 'started'`;
    await db.sql`select pgmq.archive('fused', ${task.message_id}::bigint)`;
  }
  await endClients(db.sql, [holder, claimer], pids);
  assert.deepEqual(errors, []);
  assert.equal(await deadlocks(db.sql), before, "pg_stat_database.deadlocks did not grow");
});

Deno.test("claimers on the fused read-and-claim race completions, failures and recovery for 20 rounds without a deadlock", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "fused",
    maxAttempts: 1000,
    steps: [{ slug: "each", type: "map", timeout: 1 }],
  });
  const supported = [{ flow_slug: "fused", step_slug: "each" }];
  const before = await deadlocks(db.sql);
  const clients = Array.from({ length: 6 }, () => db.connect(1));
  const pids = await Promise.all(
    clients.map(async (client) => (await client`select pg_backend_pid() as pid`)[0].pid),
  );
  const workers = await Promise.all(
    [0, 1, 2].map((i) => registerWorker(db.sql, "fused", "fused", `fused_${i}`)),
  );
  const errors: unknown[] = [];
  for (let round = 0; round < 20; round++) {
    const runId = await startFlow(db.sql, "fused", Array.from({ length: 30 }, (_, i) => i));
    const claimed = await readAndClaimFixture(db.sql, "fused", workers[0], "fused");
    // Every task looks stalled with its message visible: claims, reports and recovery all
    // reach for the same tasks and messages at once.
    await db.sql`update pgmq.q_fused set vt = clock_timestamp()`;
    await db.sql`
      update sluice.step_tasks set started_at = now() - interval '40 seconds'
      where run_id = ${runId} and status = 'started'`;
    const settle = async (work: () => Promise<unknown>) => {
      try {
        await work();
      } catch (error) {
        errors.push(error);
      }
    };
    await Promise.all([
      ...[1, 2].map((i) =>
        settle(() =>
          readAndClaim(clients[i], {
            queue: "fused",
            visibilityTimeout: 30,
            quantity: 10,
            workerId: workers[i],
            supported,
            mode: { kind: "read" },
          })
        )
      ),
      settle(async () => {
        for (const task of claimed.filter((t) => t.task_index % 3 === 0)) {
          await completeTask(clients[3], task, 1);
        }
      }),
      settle(async () => {
        for (const task of claimed.filter((t) => t.task_index % 3 === 1)) {
          await failTask(clients[4], task, "boom", 0);
        }
      }),
      settle(() => clients[5]`select sluice.requeue_stalled_tasks()`),
      settle(() =>
        clients[0]`select sluice.complete_tasks(${
          json(
            clients[0],
            claimed.filter((t) => t.task_index % 3 === 2).map((t) => ({ ...t, output: 2 })),
          )
        }::jsonb)`
      ),
    ]);
    await db.sql`select sluice.fail_run(${runId}, 'each', 'round over')`;
  }
  await endClients(db.sql, clients, pids);
  assert.deepEqual(errors, []);
  assert.equal(await deadlocks(db.sql), before, "pg_stat_database.deadlocks did not grow");
});
