// Consuming: read, read_with_poll, pop and set_vt — visibility, read_ct, locking and clocks.
import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import { waitUntil } from "../_support.ts";

Deno.test("read() hides a message until its visibility timeout passes and counts every read", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;
  const [sent] = await db.sql`select * from pgmq.send('jobs', '{"n": 1}', '{"h": 1}'::jsonb)`;

  const [first] = await db.sql`select * from pgmq.read('jobs', 1, 10)`;
  assert.deepEqual(
    {
      msg_id: first.msg_id,
      read_ct: first.read_ct,
      message: first.message,
      headers: first.headers,
    },
    { msg_id: sent.send, read_ct: 1, message: { n: 1 }, headers: { h: 1 } },
  );
  assert.deepEqual([...await db.sql`select * from pgmq.read('jobs', 1, 10)`], []);

  await db.sql`select pg_sleep(1.05)`;
  const again = await db.sql`select msg_id, read_ct from pgmq.read('jobs', 1, 10)`;
  assert.deepEqual(again.map((r) => ({ ...r })), [{ msg_id: sent.send, read_ct: 2 }]);
});

Deno.test("read() returns at most qty visible messages, oldest first", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;
  await db.sql`select pgmq.send('jobs', '{}', 3600)`;
  await db.sql`select pgmq.send_batch('jobs', array['{}', '{}', '{}', '{}', '{}']::jsonb[])`;

  const first = await db.sql`select msg_id from pgmq.read('jobs', 30, 3)`;
  const rest = await db.sql`select msg_id from pgmq.read('jobs', 30, 3)`;

  assert.deepEqual(first.map((r) => r.msg_id).sort(), ["2", "3", "4"]);
  assert.deepEqual(rest.map((r) => r.msg_id).sort(), ["5", "6"]);
});

Deno.test("read() sets vt to clock_timestamp() plus the visibility timeout", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;
  await db.sql`select pgmq.send('jobs', '{}')`;

  const [row] = await db.sql.begin(async (tx) => {
    await tx`select pg_sleep(0.2)`;
    return await tx`
      with r as (select * from pgmq.read('jobs', 10, 1))
      select r.vt - now() > interval '10.15 seconds' as from_clock,
        r.vt <= clock_timestamp() + interval '10 seconds' as not_future
      from r
    `;
  });

  assert.deepEqual({ ...row }, { from_clock: true, not_future: true });
});

Deno.test("read() reports the vt it stored", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;
  await db.sql`select pgmq.send('jobs', '{}')`;

  const [read] = await db.sql`select (vt)::text as vt, read_ct from pgmq.read('jobs', 30, 1)`;
  const [stored] = await db.sql`select (vt)::text as vt, read_ct from pgmq.q_jobs`;

  assert.deepEqual({ ...read }, { ...stored });
});

Deno.test("read() filters visibility with clock_timestamp(), not the transaction start", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;

  const read = await db.sql.begin(async (tx) => {
    await tx`select pgmq.send('jobs', '{}', clock_timestamp() + interval '100 milliseconds')`;
    await tx`select pg_sleep(0.2)`;
    return await tx`select msg_id from pgmq.read('jobs', 30, 1)`;
  });

  assert.deepEqual(read.map((r) => r.msg_id), ["1"]);
});

Deno.test("read() with a conditional returns only messages containing it", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;
  await db.sql`
    select pgmq.send_batch('jobs', array[
      '{"kind": "a", "n": 1}', '{"kind": "b", "n": 2}', '{"kind": "a", "n": 3}'
    ]::jsonb[])
  `;

  const matched = await db.sql`select msg_id from pgmq.read('jobs', 30, 10, '{"kind": "a"}')`;

  assert.deepEqual(matched.map((r) => r.msg_id).sort(), ["1", "3"]);
  const [untouched] = await db.sql`select read_ct from pgmq.q_jobs where msg_id = 2`;
  assert.equal(untouched.read_ct, 0);
});

Deno.test("read() with the default '{}' conditional returns messages of every JSON type", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;
  await db.sql`select pgmq.send_batch('jobs', array['{"o": 1}', '[1, 2]', '"text"', '7']::jsonb[])`;

  const read = await db.sql`select message from pgmq.read('jobs', 30, 10) order by msg_id`;

  assert.deepEqual(read.map((r) => r.message), [{ o: 1 }, [1, 2], "text", 7]);
});

Deno.test("read() in two open transactions returns disjoint messages (for update skip locked)", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;
  await db.sql`select pgmq.send_batch('jobs', array_fill('{}'::jsonb, array[10]))`;
  const first = db.connect(1);
  const second = db.connect(1);

  // Turns a regression (waiting on first's row locks) into an error instead of a hang.
  await second`set lock_timeout = '2s'`;
  await first`begin`;
  await second`begin`;
  const a = (await first`select msg_id from pgmq.read('jobs', 30, 6)`).map((r) => r.msg_id);
  const b = (await second`select msg_id from pgmq.read('jobs', 30, 10)`).map((r) => r.msg_id);
  await first`commit`;
  await second`commit`;

  assert.equal(a.length, 6);
  assert.equal(b.length, 4);
  assert.deepEqual([...a, ...b].sort((x, y) => Number(x) - Number(y)), [
    "1",
    "2",
    "3",
    "4",
    "5",
    "6",
    "7",
    "8",
    "9",
    "10",
  ]);
});

Deno.test("read_with_poll() returns as soon as another connection sends a message", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;
  const poller = db.connect(1);
  const [{ pid }] = await poller`select pg_backend_pid() as pid`;

  const polled = poller`
    select msg_id, read_ct, vt - interval '30 seconds' as read_at
    from pgmq.read_with_poll('jobs', 30, 5, 10, 50)`.execute();
  // Send only once the poll is under way (an empty queue: it is waiting, not finished).
  await waitUntil(async () => {
    const [row] = await db.sql`
      select count(*)::int as n from pg_stat_activity
      where pid = ${pid} and state = 'active' and query like '%read_with_poll%'`;
    return row.n === 1;
  }, "the poller to be inside read_with_poll");
  const [{ id }] = await db.sql`select id from pgmq.send('jobs', '{}') id`;
  const [sent] = await db.sql`select msg_id, enqueued_at from pgmq.q_jobs where msg_id = ${id}`;
  const rows = await polled;

  assert.deepEqual(rows.map((r) => ({ msg_id: r.msg_id, read_ct: r.read_ct })), [
    { msg_id: sent.msg_id, read_ct: 1 },
  ]);
  // Database clock: the read (vt minus the 30 s it set) follows the send by about one 50 ms poll
  // interval; a poll that waited out its 5 s would read it 5 s after the poll began. Tolerance
  // 2 s for a loaded machine, well under the 5 s the broken behaviour takes.
  const lagMs = rows[0].read_at.getTime() - sent.enqueued_at.getTime();
  assert.ok(lagMs >= 0 && lagMs < 2000, `read ${lagMs} ms after the send`);
});

Deno.test("read_with_poll() returns an empty set when nothing arrives within max_poll_seconds", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;
  await db.sql`select pgmq.send('jobs', '{"kind": "other"}')`;
  const poller = db.connect(1);

  // now() is fixed at the transaction's start, before the poll begins; clock_timestamp() is read
  // after it returns: the database clock shows the whole max_poll_seconds waited.
  await poller`begin`;
  await poller`select now()`;
  const rows = await poller`
    select * from pgmq.read_with_poll('jobs', 30, 1, 1, 100, '{"kind": "wanted"}')
  `;
  const [{ waited }] = await poller`
    select extract(epoch from clock_timestamp() - now())::float8 as waited`;
  await poller`commit`;

  assert.deepEqual([...rows], []);
  assert.ok(waited >= 1, `returned after ${waited} s of a 1 s poll`);
});

Deno.test("pop() deletes and returns the oldest visible message without counting a read", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;
  await db.sql`select pgmq.send('jobs', '{"n": 1}', 3600)`;
  await db.sql`select pgmq.send('jobs', '{"n": 2}', '{"h": 2}'::jsonb)`;
  await db.sql`select pgmq.send('jobs', '{"n": 3}')`;

  const popped = await db.sql`select msg_id, read_ct, message, headers from pgmq.pop('jobs')`;

  assert.deepEqual(popped.map((r) => ({ ...r })), [
    { msg_id: "2", read_ct: 0, message: { n: 2 }, headers: { h: 2 } },
  ]);
  const left = await db.sql`select msg_id from pgmq.q_jobs order by msg_id`;
  assert.deepEqual(left.map((r) => r.msg_id), ["1", "3"]);
  const [archived] = await db.sql`select count(*)::int as n from pgmq.a_jobs`;
  assert.equal(archived.n, 0);
});

Deno.test("pop() returns nothing when no message is visible", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;
  await db.sql`select pgmq.send('jobs', '{}', 3600)`;

  assert.deepEqual([...await db.sql`select * from pgmq.pop('jobs')`], []);
});

Deno.test("pop() takes a message that became visible after the transaction started", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;

  const popped = await db.sql.begin(async (tx) => {
    await tx`select pgmq.send('jobs', '{}', clock_timestamp() + interval '100 milliseconds')`;
    await tx`select pg_sleep(0.2)`;
    return await tx`select msg_id from pgmq.pop('jobs')`;
  });

  assert.deepEqual(popped.map((r) => r.msg_id), ["1"]);
});

Deno.test("set_vt() sets vt from clock_timestamp() whether or not the message is visible", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;
  await db.sql`select pgmq.send('jobs', '{}')`;
  await db.sql`select pgmq.read('jobs', 3600, 1)`;

  const [shown] = await db.sql`select msg_id, read_ct from pgmq.set_vt('jobs', 1, 0)`;
  assert.deepEqual({ ...shown }, { msg_id: "1", read_ct: 1 });
  const read = await db.sql`select msg_id, read_ct from pgmq.read('jobs', 0, 1)`;
  assert.deepEqual(read.map((r) => ({ ...r })), [{ msg_id: "1", read_ct: 2 }]);

  const [row] = await db.sql.begin(async (tx) => {
    await tx`select pg_sleep(0.2)`;
    return await tx`
      select vt - now() > interval '60.15 seconds' as from_clock from pgmq.set_vt('jobs', 1, 60)
    `;
  });
  assert.equal(row.from_clock, true);
  assert.deepEqual([...await db.sql`select * from pgmq.read('jobs', 30, 1)`], []);
});

Deno.test("set_vt() returns no row for an unknown message", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;

  assert.deepEqual([...await db.sql`select * from pgmq.set_vt('jobs', 42, 10)`], []);
});
