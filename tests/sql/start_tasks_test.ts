import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import { waitUntil } from "../_support.ts";
import {
  bigintArray,
  compileFlow,
  read,
  readAndClaim,
  registerWorker,
  startFlow,
  startTasks,
  supportedPairs,
  taskStatuses,
} from "./_fixtures.ts";

async function setup(timeout = 60) {
  const db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "claims",
    timeout,
    steps: [{ slug: "a", timeout: 7 }, { slug: "b" }],
  });
  const worker = await registerWorker(db.sql, "claims", "claims", "claims_fn");
  const supported = await supportedPairs(db.sql, "claims");
  return { db, worker, supported };
}

async function vtSeconds(sql: import("./_fixtures.ts").Sql, ids: string[]) {
  const rows = await sql<{ msg_id: string; secs: number }[]>`
    select msg_id, round(extract(epoch from vt - clock_timestamp()))::int as secs
    from pgmq.q_claims where msg_id = any(${bigintArray(ids)}::bigint[]) order by msg_id
  `;
  return Object.fromEntries(rows.map((r) => [r.msg_id, r.secs]));
}

Deno.test("start_tasks() claims queued tasks: started, one attempt, visibility = effective timeout + 2 s", async () => {
  const { db, worker, supported } = await setup();
  await using _ = db;
  const runId = await startFlow(db.sql, "claims", { k: 1 });
  const messages = await read(db.sql, "claims", 10, 1);
  const result = await startTasks(
    db.sql,
    "claims",
    messages.map((m) => m.msg_id),
    worker,
    supported,
  );
  assert.equal(result.outcome, "claimed");
  assert.equal(result.tasks.length, 2);
  for (const task of result.tasks) {
    assert.equal(task.attempt, 1);
    assert.deepEqual(task.input, { k: 1 });
    assert.deepEqual(task.flow_input, { k: 1 });
    assert.equal(task.timeout_seconds, task.step_slug === "a" ? 7 : 60);
  }
  assert.deepEqual(await taskStatuses(db.sql, runId), { "a:0": "started", "b:0": "started" });
  const byStep = Object.fromEntries(result.tasks.map((t) => [t.step_slug, t.message_id]));
  const vts = await vtSeconds(db.sql, Object.values(byStep));
  assert.equal(vts[byStep.a], 9, "step timeout 7 + 2");
  assert.equal(vts[byStep.b], 62, "flow timeout 60 + 2");
  const [row] = await db
    .sql`select count(*)::int as n from sluice.step_tasks where last_worker_id = ${worker}`;
  assert.equal(row.n, 2);
});

Deno.test("start_tasks() leaves the visibility a read set when it already hides the message for the claim, and not past its stall deadline", async () => {
  const { db, worker, supported } = await setup();
  await using _ = db;
  await startFlow(db.sql, "claims", {});
  // Read with b's claim visibility (flow timeout 60 + 2 s): 62 s is past a's stall deadline
  // (7 + 30 s), so a's claim still shortens it, while b's message row is not written again.
  const messages = await read(db.sql, "claims", 2, 62);
  const versions = async () =>
    Object.fromEntries(
      (await db.sql<{ msg_id: string; version: string }[]>`
        select msg_id::text, xmin::text || '/' || ctid::text as version from pgmq.q_claims
      `).map((r) => [r.msg_id, r.version]),
    );
  const before = await versions();
  const result = await startTasks(
    db.sql,
    "claims",
    messages.map((m) => m.msg_id),
    worker,
    supported,
  );
  assert.equal(result.outcome, "claimed");
  const byStep = Object.fromEntries(result.tasks.map((t) => [t.step_slug, t.message_id]));
  const after = await versions();
  assert.equal(after[byStep.b], before[byStep.b], "b's message row was updated again");
  assert.notEqual(after[byStep.a], before[byStep.a]);
  const vts = await vtSeconds(db.sql, Object.values(byStep));
  assert.equal(vts[byStep.a], 9, "step timeout 7 + 2");
  assert.equal(vts[byStep.b], 62, "flow timeout 60 + 2, as the read set it");
});

Deno.test("start_tasks() treats a started task as a benign duplicate: no attempt used, hidden until stall recovery", async () => {
  const { db, worker, supported } = await setup();
  await using _ = db;
  const runId = await startFlow(db.sql, "claims", {});
  const claimed = await readAndClaim(db.sql, "claims", worker, "claims");
  const ids = claimed.map((t) => t.message_id);
  await db.sql`update pgmq.q_claims set vt = clock_timestamp()`;
  const again = await startTasks(db.sql, "claims", ids, worker, supported);
  assert.equal(again.outcome, "claimed");
  assert.deepEqual(again.tasks, []);
  assert.deepEqual([...again.duplicates].sort(), [...ids].sort());
  const [row] = await db
    .sql`select max(attempts_count)::int as n from sluice.step_tasks where run_id = ${runId}`;
  assert.equal(row.n, 1);
  const byStep = Object.fromEntries(claimed.map((t) => [t.step_slug, t.message_id]));
  const vts = await vtSeconds(db.sql, ids);
  assert.ok(vts[byStep.a] >= 36 && vts[byStep.a] <= 37, `a hidden ~7+30 s, got ${vts[byStep.a]}`);
  assert.ok(vts[byStep.b] >= 89 && vts[byStep.b] <= 90, `b hidden ~60+30 s, got ${vts[byStep.b]}`);
});

Deno.test("start_tasks() archives the message of a terminal task", async () => {
  const { db, worker, supported } = await setup();
  await using _ = db;
  const runId = await startFlow(db.sql, "claims", {});
  const [message] = await read(db.sql, "claims", 1);
  await db.sql`
    update sluice.step_tasks set status = 'completed', completed_at = now(), started_at = now()
    where run_id = ${runId} and message_id = ${message.msg_id}
  `;
  const result = await startTasks(db.sql, "claims", [message.msg_id], worker, supported);
  assert.deepEqual(result.archived, [message.msg_id]);
  const [row] = await db
    .sql`select count(*)::int as n from pgmq.a_claims where msg_id = ${message.msg_id}`;
  assert.equal(row.n, 1);
  const again = await startTasks(db.sql, "claims", [message.msg_id], worker, supported);
  assert.equal(again.outcome, "claimed", "archiving again is idempotent");
});

async function assertFatal(
  sql: import("./_fixtures.ts").Sql,
  result: Awaited<ReturnType<typeof startTasks>>,
  expected: { message_id: string; class: string }[],
  batch: string[],
) {
  assert.equal(result.outcome, "fatal");
  assert.deepEqual(result.tasks, []);
  assert.deepEqual(result.fatal, expected);
  const [started] =
    await sql`select count(*)::int as n from sluice.step_tasks where status <> 'queued'`;
  assert.equal(started.n, 0, "nothing is claimed, not even the valid messages of the batch");
  const visible = await sql`
    select msg_id from pgmq.q_claims where vt <= clock_timestamp() and msg_id = any(${
    bigintArray(batch)
  }::bigint[])
  `;
  assert.equal(visible.length, batch.length, "the whole batch is visible again");
  const [fn] =
    await sql`select restart_paused_at, pause_reason from sluice.worker_functions where function_name = 'claims_fn'`;
  assert.ok(fn.restart_paused_at instanceof Date, "the worker function's restarts are paused");
  for (const f of expected) {
    assert.ok(fn.pause_reason.includes(`message ${f.message_id} (${f.class})`));
  }
  assert.ok(!fn.pause_reason.includes("{"), "the pause reason never carries message bodies");
}

Deno.test("start_tasks() classifies a message without a task as missing: fatal, batch visible, restarts paused", async () => {
  const { db, worker, supported } = await setup();
  await using _ = db;
  await startFlow(db.sql, "claims", {});
  const [foreign] = await db
    .sql`select * from pgmq.send('claims', '{"hello":"world"}'::jsonb) as id`;
  const batch = [...(await read(db.sql, "claims", 10)).map((m) => m.msg_id)];
  assert.ok(batch.includes(foreign.id));
  const result = await startTasks(db.sql, "claims", batch, worker, supported);
  await assertFatal(db.sql, result, [{ message_id: foreign.id, class: "missing" }], batch);
});

Deno.test("start_tasks() classifies a body that disagrees with the task found by identity as wrong_queue", async () => {
  const { db, worker, supported } = await setup();
  await using _ = db;
  await startFlow(db.sql, "claims", {});
  const batch = (await read(db.sql, "claims", 10)).map((m) => m.msg_id);
  await db
    .sql`update pgmq.q_claims set message = jsonb_set(message, '{task_index}', '5') where msg_id = ${
    batch[0]
  }`;
  const result = await startTasks(db.sql, "claims", batch, worker, supported);
  await assertFatal(db.sql, result, [{ message_id: batch[0], class: "wrong_queue" }], batch);
});

Deno.test("start_tasks() classifies a message naming a task of another queue as wrong_queue", async () => {
  const { db, worker, supported } = await setup();
  await using _ = db;
  await compileFlow(db.sql, { slug: "elsewhere", steps: [{ slug: "x" }] });
  const otherRun = await startFlow(db.sql, "elsewhere", {});
  const [copy] = await db.sql`
    select * from pgmq.send('claims', jsonb_build_object('flow_slug', 'elsewhere', 'run_id', ${otherRun}::uuid, 'step_slug', 'x', 'task_index', 0)) as id
  `;
  const result = await startTasks(db.sql, "claims", [copy.id], worker, supported);
  await assertFatal(db.sql, result, [{ message_id: copy.id, class: "wrong_queue" }], [copy.id]);
});

Deno.test("start_tasks() classifies a route the worker does not support as unsupported", async () => {
  const { db, worker } = await setup();
  await using _ = db;
  await startFlow(db.sql, "claims", {});
  const batch = (await read(db.sql, "claims", 10)).map((m) => m.msg_id);
  const [b] = await db.sql`select message_id from sluice.step_tasks where step_slug = 'b'`;
  const result = await startTasks(db.sql, "claims", batch, worker, [
    { flow_slug: "claims", step_slug: "a" },
  ]);
  await assertFatal(db.sql, result, [{ message_id: b.message_id, class: "unsupported" }], batch);
});

Deno.test("start_tasks() rejects an unregistered worker", async () => {
  const { db, supported } = await setup();
  await using _ = db;
  const stranger = crypto.randomUUID();
  await assert.rejects(
    startTasks(db.sql, "claims", ["1"], stranger, supported),
    new RegExp(`worker ${stranger} is not registered`),
  );
});

Deno.test("start_tasks() fails the claim and rolls back attempts when visibility is not applied to every message", async () => {
  const { db, worker, supported } = await setup();
  await using _ = db;
  const runId = await startFlow(db.sql, "claims", {});
  // Read with a 1 s visibility, so that the claim must set it on both messages.
  const batch = (await read(db.sql, "claims", 10, 1)).map((m) => m.msg_id);
  // A trigger that silently drops the visibility update of one message forces a partial update.
  await db.sql.unsafe(`
    create function pg_temp_skip() returns trigger language plpgsql as $$
    begin if old.msg_id = ${batch[0]} then return null; end if; return new; end $$;
    create trigger skip_one before update on pgmq.q_claims for each row execute function pg_temp_skip();
  `);
  await assert.rejects(
    startTasks(db.sql, "claims", batch, worker, supported),
    /visibility was applied to 1 of 2 messages/,
  );
  const [row] = await db.sql`
    select max(attempts_count)::int as attempts, bool_and(status = 'queued') as queued
    from sluice.step_tasks where run_id = ${runId}
  `;
  assert.deepEqual({ ...row }, { attempts: 0, queued: true });
});

Deno.test("two workers racing to claim the same messages never both claim a task", async () => {
  const { db, supported } = await setup();
  await using _ = db;
  for (let i = 0; i < 20; i++) await startFlow(db.sql, "claims", { i });
  const ids = (await read(db.sql, "claims", 100)).map((m) => m.msg_id);
  const workers = [
    await registerWorker(db.sql, "claims", "claims", "w1"),
    await registerWorker(db.sql, "claims", "claims", "w2"),
  ];
  const first = db.connect(1);
  const second = db.connect(1);
  const [{ pid }] = await second`select pg_backend_pid() as pid`;

  // Force the overlap: the second claim runs while the first's claim is not yet committed, and
  // the first commits only once the second has either finished or is waiting on its locks.
  await first`begin`;
  const won = await startTasks(first, "claims", ids, workers[0], supported);
  let settled = false;
  const later = startTasks(second, "claims", ids, workers[1], supported).finally(() => {
    settled = true;
  });
  await waitUntil(async () => {
    if (settled) return true;
    const [row] = await db.sql`
      select coalesce(wait_event_type = 'Lock', false) as waiting
      from pg_stat_activity where pid = ${pid}`;
    return row.waiting;
  }, "the second claim to finish or wait on the first's locks");
  await first`commit`;
  const lost = await later;

  assert.equal(won.outcome, "claimed");
  assert.equal(won.tasks.length, ids.length, "the first claim took every task");
  const claimed = [won, lost].flatMap((r) => r.tasks.map((t) => t.message_id));
  assert.equal(claimed.length, ids.length, "no task claimed twice");
  assert.equal(new Set(claimed).size, ids.length);
  const [row] = await db.sql`select max(attempts_count)::int as n from sluice.step_tasks`;
  assert.equal(row.n, 1);
});

Deno.test("a restart pause survives a worker starting again (track_worker_function); only clear_restart_pause lifts it", async () => {
  const { db, worker, supported } = await setup();
  await using _ = db;
  const [foreign] = await db
    .sql`select * from pgmq.send('claims', '{"hello":"world"}'::jsonb) as id`;
  const result = await startTasks(db.sql, "claims", [foreign.id], worker, supported);
  assert.equal(result.outcome, "fatal");

  // Every startWorker outside Edge tracks its function first: that must not lift the pause.
  const [tracked] = await db.sql`
    select restart_paused_at, pause_reason from sluice.track_worker_function('claims_fn')`;
  assert.ok(tracked.restart_paused_at instanceof Date, "still paused after tracking");
  assert.match(tracked.pause_reason, new RegExp(`message ${foreign.id} \\(missing\\)`));
  const [{ cleared }] = await db.sql`select sluice.clear_restart_pause('claims_fn') as cleared`;
  assert.ok(cleared);
  const [fn] = await db.sql`
    select restart_paused_at from sluice.worker_functions where function_name = 'claims_fn'`;
  assert.equal(fn.restart_paused_at, null);
});
