// Queue lifecycle: create (plain and unlogged), drop, purge and list.
import assert from "node:assert/strict";
import { freshDatabase, installedPgmq } from "../_db.ts";
import { backendPid, waitUntilBlocked } from "./_pgmq.ts";

Deno.test("create() is idempotent and keeps the messages of an existing queue", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;
  await db.sql`select pgmq.send('jobs', '{"keep": true}')`;

  await db.sql`select pgmq.create('jobs')`;
  await db.sql`select pgmq.create_non_partitioned('jobs')`;

  const [q] = await db.sql`select count(*)::int as n from pgmq.q_jobs`;
  assert.equal(q.n, 1);
  const queues = await db.sql`select * from pgmq.list_queues() where queue_name = 'jobs'`;
  assert.equal(queues.length, 1);
});

Deno.test("create() inside a rolled-back transaction leaves no queue behind", async () => {
  await using db = await freshDatabase();

  await assert.rejects(db.sql.begin(async (tx) => {
    await tx`select pgmq.create('jobs')`;
    throw new Error("roll back");
  }));

  const [row] = await db.sql`
    select to_regclass('pgmq.q_jobs') is null as no_q, to_regclass('pgmq.a_jobs') is null as no_a,
      (select count(*)::int from pgmq.meta where queue_name = 'jobs') as queues
  `;
  assert.deepEqual({ ...row }, { no_q: true, no_a: true, queues: 0 });
});

Deno.test({
  name: "compat layer: create() of the same queue from two open transactions succeeds in both",
  // PGMQ 1.5.1 does not serialize creators (the loser may fail on pg_type's unique index); sluice
  // does not rely on either: it serializes its own creators (tests/sql/ensure_flow_compiled_test.ts).
  ignore: installedPgmq() !== "compat",
  async fn() {
    await using db = await freshDatabase();
    const first = db.connect(1);
    const second = db.connect(1);
    const secondPid = await backendPid(second);

    await first`begin`;
    await first`select pgmq.create('jobs')`;
    const created = second`select pgmq.create('jobs')`.execute();
    await waitUntilBlocked(db.sql, secondPid);
    await first`commit`;

    await created;
    const queues = await db
      .sql`select queue_name from pgmq.list_queues() where queue_name = 'jobs'`;
    assert.deepEqual(queues.map((q) => q.queue_name), ["jobs"]);
  },
});

Deno.test("create() and create_non_partitioned() record a logged, non-partitioned queue created at now()", async () => {
  await using db = await freshDatabase();

  const [row] = await db.sql.begin(async (tx) => {
    await tx`select pgmq.create('a')`;
    await tx`select pgmq.create_non_partitioned('b')`;
    return await tx`
      select array_agg(m.queue_name order by m.queue_name) as names,
        bool_and(not m.is_partitioned and not m.is_unlogged) as flags,
        bool_and(m.created_at = now()) as at_now
      from pgmq.list_queues() m
      where m.queue_name in ('a', 'b')
    `;
  });
  assert.deepEqual({ ...row }, { names: ["a", "b"], flags: true, at_now: true });
  const [persistence] = await db.sql`
    select string_agg(relpersistence::text, '' order by relname) as p
    from pg_class where relnamespace = 'pgmq'::regnamespace and relname in ('q_a', 'a_a', 'q_b', 'a_b')
  `;
  assert.equal(persistence.p, "pppp");
});

Deno.test("create_unlogged() makes only the queue table unlogged and records is_unlogged", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create_unlogged('fast')`;

  const [row] = await db.sql`
    select (select relpersistence::text from pg_class where oid = 'pgmq.q_fast'::regclass) as q,
      (select relpersistence::text from pg_class where oid = 'pgmq.a_fast'::regclass) as a,
      (select is_unlogged from pgmq.meta where queue_name = 'fast') as is_unlogged
  `;
  assert.deepEqual({ ...row }, { q: "u", a: "p", is_unlogged: true });
  const [sent] = await db.sql`select * from pgmq.send('fast', '{}')`;
  assert.equal(sent.send, "1");
});

Deno.test("drop_queue() removes both tables and the meta row and returns true", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;
  await db.sql`select pgmq.create('other')`;

  const [drop] = await db.sql`select pgmq.drop_queue('jobs') as dropped`;

  assert.equal(drop.dropped, true);
  const [row] = await db.sql`
    select to_regclass('pgmq.q_jobs') is null as no_q, to_regclass('pgmq.a_jobs') is null as no_a
  `;
  assert.deepEqual({ ...row }, { no_q: true, no_a: true });
  const queues = await db.sql`
    select queue_name from pgmq.list_queues() where queue_name in ('jobs', 'other')
  `;
  assert.deepEqual(queues.map((q) => q.queue_name), ["other"]);
});

Deno.test("drop_queue() of a queue that does not exist raises as PGMQ 1.5.1 does", async () => {
  await using db = await freshDatabase();

  await assert.rejects(db.sql`select pgmq.drop_queue('Missing')`, {
    message: 'relation "pgmq.q_missing" does not exist',
    code: "42P01",
  });
});

Deno.test("the deprecated drop_queue(name, partitioned) drops the queue like drop_queue(name)", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;

  const [drop] = await db.sql`select pgmq.drop_queue('jobs', false) as dropped`;

  assert.equal(drop.dropped, true);
  const [row] = await db.sql`
    select to_regclass('pgmq.q_jobs') is null as no_q, to_regclass('pgmq.a_jobs') is null as no_a,
      (select count(*)::int from pgmq.meta where queue_name = 'jobs') as queues
  `;
  assert.deepEqual({ ...row }, { no_q: true, no_a: true, queues: 0 });
});

Deno.test("detach_archive() leaves the archive outside any extension and raises for a missing one", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;
  await db.sql`select pgmq.send('jobs', '{}')`;
  await db.sql`select pgmq.archive('jobs', 1::bigint)`;

  await db.sql`select pgmq.detach_archive('jobs')`;

  const [row] = await db.sql`
    select (select count(*)::int from pgmq.a_jobs) as archived,
      exists (
        select 1 from pg_depend
        where classid = 'pg_class'::regclass and objid = 'pgmq.a_jobs'::regclass and deptype = 'e'
      ) as member
  `;
  assert.deepEqual({ ...row }, { archived: 1, member: false });
  await assert.rejects(db.sql`select pgmq.detach_archive('missing')`, {
    message: 'relation "pgmq.a_missing" does not exist',
  });
});

Deno.test("purge_queue() deletes every message, returns the count and leaves the archive alone", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;
  await db.sql`select pgmq.send_batch('jobs', array['{}', '{}', '{}', '{}']::jsonb[])`;
  await db.sql`select pgmq.send('jobs', '{}', 3600)`;
  await db.sql`select pgmq.archive('jobs', 1::bigint)`;

  const [purge] = await db.sql`select pgmq.purge_queue('jobs') as purged`;

  assert.equal(purge.purged, "4");
  const [row] = await db.sql`
    select (select count(*)::int from pgmq.q_jobs) as queued,
      (select count(*)::int from pgmq.a_jobs) as archived
  `;
  assert.deepEqual({ ...row }, { queued: 0, archived: 1 });
});

Deno.test("list_queues() returns each queue's name as spelled, its flags and creation time", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('Alpha')`;
  await db.sql`select pgmq.create_unlogged('beta')`;

  const rows = await db.sql`
    select queue_name, is_partitioned, is_unlogged, created_at is not null as has_created_at
    from pgmq.list_queues() where queue_name in ('Alpha', 'beta') order by queue_name
  `;

  assert.deepEqual(rows.map((r) => ({ ...r })), [
    { queue_name: "Alpha", is_partitioned: false, is_unlogged: false, has_created_at: true },
    { queue_name: "beta", is_partitioned: false, is_unlogged: true, has_created_at: true },
  ]);
});
