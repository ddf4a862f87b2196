// Queue names: how they map to tables and which ones PGMQ rejects, with its exact error texts.
import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";

const invalidCharacters = "queue name contains invalid characters: $, ;, --, or \\'";
// 1.5.1's text (off by one: 47 characters is the limit); the compat layer says the same.
const tooLong = "queue name is too long, maximum length is 48 characters";

Deno.test("format_table_name() joins prefix and name and lowercases the result", async () => {
  await using db = await freshDatabase();

  const [row] = await db.sql`
    select pgmq.format_table_name('Orders', 'q') as q, pgmq.format_table_name('Orders', 'A') as a
  `;
  assert.deepEqual({ ...row }, { q: "q_orders", a: "a_orders" });
});

Deno.test("mixed-case queue names share lowercase tables while meta keeps the caller's spelling", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('Foo')`;

  const [tables] = await db.sql`
    select to_regclass('pgmq.q_foo') is not null as q_lower,
      to_regclass('pgmq.a_foo') is not null as a_lower,
      to_regclass('pgmq."q_Foo"') is null as no_q_mixed
  `;
  assert.deepEqual({ ...tables }, { q_lower: true, a_lower: true, no_q_mixed: true });

  const [id] = await db.sql`select * from pgmq.send('Foo', '{"n": 1}')`;
  const read = await db.sql`select msg_id from pgmq.read('foo', 30, 1)`;
  assert.deepEqual(read.map((r) => r.msg_id), [id.send]);

  const queues = await db.sql`
    select queue_name from pgmq.list_queues() where lower(queue_name) = 'foo'
  `;
  assert.deepEqual(queues.map((q) => q.queue_name), ["Foo"]);
});

Deno.test("create() accepts a 47-character name and rejects 48 characters with the PGMQ error", async () => {
  await using db = await freshDatabase();
  const name47 = "q".repeat(47);
  const name48 = "q".repeat(48);

  await db.sql`select pgmq.create(${name47})`;
  const queues = await db.sql`
    select queue_name from pgmq.list_queues() where queue_name like 'qqq%'
  `;
  assert.deepEqual(queues.map((q) => q.queue_name), [name47]);

  for (const create of ["create", "create_non_partitioned", "create_unlogged"]) {
    await assert.rejects(db.sql`select pgmq.${db.sql(create)}(${name48})`, { message: tooLong });
  }
  await assert.rejects(db.sql`select pgmq.validate_queue_name(${name48})`, { message: tooLong });
  const [count] = await db
    .sql`select count(*)::int as n from pgmq.meta where queue_name like 'qqq%'`;
  assert.equal(count.n, 1);
});

Deno.test("only the create functions check the length: format_table_name() accepts 48 characters", async () => {
  await using db = await freshDatabase();

  const [row] = await db.sql`select pgmq.format_table_name(${"x".repeat(48)}, 'q') as name`;
  assert.equal(row.name, `q_${"x".repeat(48)}`);
});

Deno.test("queue names containing $, ;, -- or ' are rejected with the PGMQ error text", async () => {
  await using db = await freshDatabase();

  for (const name of ["a$b", "a;b", "a--b", "a'b"]) {
    await assert.rejects(db.sql`select pgmq.create(${name})`, { message: invalidCharacters }, name);
    await assert.rejects(
      db.sql`select pgmq.format_table_name(${name}, 'q')`,
      { message: invalidCharacters },
      name,
    );
    await assert.rejects(
      db.sql`select * from pgmq.send(${name}, '{}')`,
      { message: invalidCharacters },
      name,
    );
  }
});

Deno.test("queue names with single hyphens and spaces work because identifiers are quoted", async () => {
  await using db = await freshDatabase();

  for (const name of ["order-events", "my queue"]) {
    await db.sql`select pgmq.create(${name})`;
    const [sent] = await db.sql`select * from pgmq.send(${name}, '{"ok": true}')`;
    const [read] = await db.sql`select msg_id, message from pgmq.read(${name}, 30, 1)`;
    assert.deepEqual({ ...read }, { msg_id: sent.send, message: { ok: true } }, name);
    const [drop] = await db.sql`select pgmq.drop_queue(${name}) as dropped`;
    assert.equal(drop.dropped, true, name);
  }
});
