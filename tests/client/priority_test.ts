// Priorities (docs/flow_control.md#priorities): the worker's read takes the ready tasks of
// higher-priority runs first within a queue, even behind a deep backlog, and keeps PGMQ's
// first-queued-first-read order among equal priorities; on the compat layer and the real PGMQ
// extension alike (the read picks from the queue table, as pgmq.read would).
import assert from "node:assert/strict";
import { startFlow } from "../../src/client/mod.ts";
import { compileFlow } from "../../src/admin/mod.ts";
import { Flow } from "../../src/dsl/flow.ts";
import { StartOptionError } from "../../src/dsl/start_options.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { testWorker, waitUntil } from "../worker/_helpers.ts";
import { spawnWorkerProcess } from "../worker/_worker_process.ts";
import { racingFlow } from "./_priority_flow.ts";

const chores = new Flow<{ n: number }>({ slug: "chores" }).step({ slug: "do" }, () => 1);

/** Starts `count` runs of priority 0, in order, in one statement each batch. */
async function backlog(db: TestDatabase, flowSlug: string, count: number): Promise<string[]> {
  const rows = await db.sql<{ run_id: string }[]>`
    select sluice.start_flow(${flowSlug}, jsonb_build_object('n', i), null)::text as run_id
    from generate_series(0, ${count - 1}) i order by i`;
  return rows.map((row) => row.run_id);
}

/** Reads one message at a time, as a worker with one free slot does, until none is visible. */
async function readOneByOne(db: TestDatabase, queue: string): Promise<string[]> {
  const order: string[] = [];
  for (;;) {
    const rows = await db.sql<{ run_id: string; read_ct: number; hidden: boolean }[]>`
      select message ->> 'run_id' as run_id, read_ct,
        vt > clock_timestamp() + interval '20 seconds' as hidden
      from sluice.read_messages(${queue}, 30, 1)`;
    if (rows.length === 0) return order;
    assert.equal(rows.length, 1);
    // As pgmq.read: counted, and hidden for the visibility timeout.
    assert.deepEqual({ read_ct: rows[0].read_ct, hidden: rows[0].hidden }, {
      read_ct: 1,
      hidden: true,
    });
    order.push(rows[0].run_id);
  }
}

Deno.test("a read takes higher priorities first, then the backlog in queue order, then lower priorities", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, chores);
  const queued = await backlog(db, "chores", 300);
  const a = await startFlow(db.sql, chores, { n: -1 }, { priority: 5 });
  const low = await startFlow(db.sql, chores, { n: -2 }, { priority: -3 });
  const b = await startFlow(db.sql, chores, { n: -3 }, { priority: 5 });
  const top = await startFlow(db.sql, chores, { n: -4 }, { priority: 9 });
  const [{ prioritized }] = await db.sql<{ prioritized: number }[]>`
    select count(*)::int as prioritized from sluice.step_tasks where priority <> 0`;
  assert.equal(prioritized, 4);
  assert.deepEqual(await readOneByOne(db, "chores"), [top, a, b, ...queued, low]);
});

Deno.test("a batch read fills up from the next priority, and skips messages another reader holds", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, chores);
  const queued = await backlog(db, "chores", 5);
  const urgent = await startFlow(db.sql, chores, { n: 99 }, { priority: 1 });
  // Another reader holds the urgent message: this read takes the backlog instead of waiting.
  const holder = db.connect(1);
  let release!: () => void;
  const mayEnd = new Promise<void>((resolve) => release = resolve);
  let locked!: () => void;
  const holding = new Promise<void>((resolve) => locked = resolve);
  const held = holder.begin(async (tx) => {
    await tx`
      select 1 from pgmq.q_chores q
      where q.msg_id = (select message_id from sluice.step_tasks where run_id = ${urgent}::uuid)
      for update`;
    locked();
    await mayEnd;
  });
  await holding;
  const skipping = await db.sql<{ run_id: string }[]>`
    select message ->> 'run_id' as run_id from sluice.read_messages('chores', 30, 2)`;
  assert.deepEqual(skipping.map((row) => row.run_id).sort(), queued.slice(0, 2).sort());
  release();
  await held;
  const batch = await db.sql<{ run_id: string }[]>`
    select message ->> 'run_id' as run_id from sluice.read_messages('chores', 30, 3)`;
  assert.deepEqual(batch.map((row) => row.run_id).sort(), [urgent, ...queued.slice(2, 4)].sort());
  // The long-poll read takes the same order.
  const polled = await db.sql<{ run_id: string }[]>`
    select message ->> 'run_id' as run_id
    from sluice.read_messages_with_poll('chores', 30, 5, 1, 50)`;
  assert.deepEqual(polled.map((row) => row.run_id), [queued[4]]);
});

Deno.test("a worker runs a priority run's steps before a 300-run backlog it is working through; equal priorities stay first in, first out", async () => {
  await using db = await freshDatabase();
  const order: { run: number; step: string }[] = [];
  const flow = new Flow<{ n: number }>({ slug: "backlogged" })
    .step({ slug: "first" }, (input) => {
      order.push({ run: input.n, step: "first" });
      return input.n;
    })
    .step({ slug: "second", dependsOn: ["first"] }, (deps) => {
      order.push({ run: deps.first, step: "second" });
      return deps.first;
    });
  await compileFlow(db.sql, flow);
  await backlog(db, "backlogged", 300);
  await using _worker = await testWorker(flow, db, { maxConcurrent: 1, logLevel: "warn" });
  await waitUntil(() => order.length >= 20, "the worker working through the backlog");
  const at = order.length;
  const urgent = await startFlow(db.sql, flow, { n: 1000 }, { priority: 10 });
  await waitUntil(async () => {
    const [run] = await db.sql<{ status: string }[]>`
      select status from sluice.runs where run_id = ${urgent}::uuid`;
    return run.status === "completed";
  }, "the priority run completing");
  const first = order.findIndex((entry) => entry.run === 1000 && entry.step === "first");
  const second = order.findIndex((entry) => entry.run === 1000 && entry.step === "second");
  // Each of its steps starts within a task or two (the one running, one already read) of being
  // ready, where the backlog had hundreds of tasks ahead of it.
  assert.ok(first - at <= 2, `its first step ran ${first - at} tasks after its start`);
  assert.ok(second - first <= 2, `its second step ran ${second - first} tasks after its first`);
  assert.ok(order.length - at < 20, `${order.length - at} tasks ran before it completed`);

  await waitUntil(() => order.length === 602, "the backlog done", 120_000);
  // Equal priorities: first queued, first run. Each backlog step ran in its runs' start order.
  for (const step of ["first", "second"]) {
    const runs = order.filter((entry) => entry.step === step && entry.run !== 1000)
      .map((entry) => entry.run);
    assert.deepEqual(runs, [...runs].sort((x, y) => x - y), `${step} in start order`);
  }
});

Deno.test("priority reaches every task of the run, through idempotent and debounced starts too", async () => {
  await using db = await freshDatabase();
  const mapped = new Flow<number[]>({ slug: "mapped" }).map({ slug: "each" }, (n) => n);
  await compileFlow(db.sql, mapped);
  const keyed = await startFlow(db.sql, mapped, [1, 2, 3], { idempotencyKey: "k", priority: 4 });
  // The key's existing run keeps its priority.
  assert.equal(
    await startFlow(db.sql, mapped, [1, 2, 3], { idempotencyKey: "k", priority: 9 }),
    keyed,
  );
  const debounced = await startFlow(db.sql, mapped, [4], {
    debounce: { key: "d", windowSeconds: 60 },
    priority: 2,
  });
  await startFlow(db.sql, mapped, [5, 6], {
    debounce: { key: "d", windowSeconds: 60 },
    priority: 7,
  });
  await db.sql`update sluice.debounced_starts set due_at = clock_timestamp()`;
  await db.sql`select sluice.start_due_debounced()`;
  const plain = await startFlow(db.sql, mapped, [7]);
  const rows = await db.sql<{ run_id: string; run: number; tasks: number[] }[]>`
    select r.run_id::text, r.priority as run, array_agg(t.priority order by t.task_index) as tasks
    from sluice.runs r join sluice.step_tasks t on t.run_id = r.run_id
    group by r.run_id, r.priority`;
  const byRun = Object.fromEntries(rows.map((row) => [row.run_id, [row.run, row.tasks]]));
  assert.deepEqual(byRun, {
    [keyed]: [4, [4, 4, 4]],
    [debounced]: [7, [7, 7]],
    [plain]: [0, [0]],
  });
});

Deno.test("bad priorities are refused before anything is written", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, chores);
  for (const priority of [1.5, 1001, -1001, Number.NaN, "1"]) {
    await assert.rejects(
      // deno-lint-ignore no-explicit-any
      startFlow(db.sql, chores, { n: 1 }, { priority: priority as any }),
      (error: unknown) =>
        error instanceof StartOptionError && error.option === "priority" &&
        error.message.startsWith(
          'Cannot start flow "chores": priority must be a whole number from -1000 to 1000, got',
        ),
      String(priority),
    );
  }
  for (
    const [options, shown] of [['{"priority": 2.5}', "2.5"], ['{"priority": "high"}', '"high"']]
  ) {
    await assert.rejects(
      db.sql`select sluice.start_flow('chores', '{"n": 1}', null, ${options}::text::jsonb)`,
      (error: { code?: string; message?: string }) =>
        error.code === "22023" &&
        error.message ===
          `Cannot start flow "chores": priority must be a whole number from -1000 to 1000, got ${shown}`,
    );
  }
  const [{ runs }] = await db.sql<
    { runs: number }[]
  >`select count(*)::int as runs from sluice.runs`;
  assert.equal(runs, 0);
});

Deno.test("three worker processes racing through a 300-run backlog start a priority run's tasks next", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, racingFlow);
  await backlog(db, racingFlow.slug, 300);
  const workers = Array.from(
    { length: 3 },
    () => spawnWorkerProcess(new URL("./_priority_worker.ts", import.meta.url), [db.url]),
  );
  try {
    for (const worker of workers) assert.equal(await worker.nextLine(), "READY");
    await waitUntil(async () => {
      const [{ done }] = await db.sql<{ done: number }[]>`
        select count(*)::int as done from sluice.step_tasks where status = 'completed'`;
      return done >= 30;
    }, "the workers working through the backlog");
    const urgent = await startFlow(db.sql, racingFlow, { n: 1000 }, { priority: 10 });
    await waitUntil(async () => {
      const [run] = await db.sql<{ status: string }[]>`
        select status from sluice.runs where run_id = ${urgent}::uuid`;
      return run.status === "completed";
    }, "the priority run completing");
    // From SQL: the backlog tasks claimed while each of its tasks was ready but not yet claimed
    // are at most the reads already under way (one per worker, and one racing the claim of it),
    // and hundreds were claimed after.
    const rows = await db.sql<{ step_slug: string; overtaken_by: number; behind: number }[]>`
      select u.step_slug,
        (select count(*)::int from sluice.step_tasks b
         where b.run_id <> u.run_id and b.started_at > u.queued_at
           and b.started_at < u.started_at) as overtaken_by,
        (select count(*)::int from sluice.step_tasks b
         where b.run_id <> u.run_id and (b.started_at > u.started_at or b.status = 'queued'))
          as behind
      from sluice.step_tasks u where u.run_id = ${urgent}::uuid order by u.step_slug`;
    for (const row of rows) {
      assert.ok(row.overtaken_by <= 6, `${row.step_slug}: ${row.overtaken_by} backlog tasks first`);
      assert.ok(row.behind >= 200, `${row.step_slug}: only ${row.behind} backlog tasks after it`);
    }
    assert.equal(rows.length, 2);
  } finally {
    for (const worker of workers) await worker[Symbol.asyncDispose]();
  }
});
