// Producing: every send and send_batch overload, delays, ordering and clocks.
import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import { jsonbArray } from "./_pgmq.ts";

Deno.test("send() overloads store message and headers and return the new id", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;

  const ids = [
    await db.sql`select * from pgmq.send('jobs', '{"n": 1}')`,
    await db.sql`select * from pgmq.send('jobs', '{"n": 2}', '{"h": 2}'::jsonb)`,
    await db.sql`select * from pgmq.send('jobs', '{"n": 3}', 0)`,
    await db.sql`select * from pgmq.send('jobs', '{"n": 4}', clock_timestamp())`,
    await db.sql`select * from pgmq.send('jobs', '{"n": 5}', '{"h": 5}'::jsonb, 0)`,
    await db.sql`select * from pgmq.send('jobs', '{"n": 6}', '{"h": 6}'::jsonb, clock_timestamp())`,
  ].map(([row]) => row.send);

  assert.deepEqual(ids, ["1", "2", "3", "4", "5", "6"]);
  const rows = await db
    .sql`select msg_id, read_ct, message, headers from pgmq.q_jobs order by msg_id`;
  assert.deepEqual(rows.map((r) => ({ ...r })), [
    { msg_id: "1", read_ct: 0, message: { n: 1 }, headers: null },
    { msg_id: "2", read_ct: 0, message: { n: 2 }, headers: { h: 2 } },
    { msg_id: "3", read_ct: 0, message: { n: 3 }, headers: null },
    { msg_id: "4", read_ct: 0, message: { n: 4 }, headers: null },
    { msg_id: "5", read_ct: 0, message: { n: 5 }, headers: { h: 5 } },
    { msg_id: "6", read_ct: 0, message: { n: 6 }, headers: { h: 6 } },
  ]);
});

Deno.test("send() with an integer delay hides the message until the delay has passed", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;

  const [sent] = await db.sql`select * from pgmq.send('jobs', '{}', 1)`;

  assert.deepEqual([...await db.sql`select * from pgmq.read('jobs', 30, 10)`], []);
  await db.sql`select pg_sleep(1.05)`;
  const read = await db.sql`select msg_id from pgmq.read('jobs', 30, 10)`;
  assert.deepEqual(read.map((r) => r.msg_id), [sent.send]);
});

Deno.test("send() with a timestamptz delay uses it as vt and hides the message until then", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;

  await db.sql`
    select pgmq.send('jobs', '{}', '{"h": 1}'::jsonb, '2999-01-01T00:00:00Z'::timestamptz)
  `;

  const [row] = await db.sql`
    select vt = '2999-01-01T00:00:00Z'::timestamptz as vt_is_delay from pgmq.q_jobs
  `;
  assert.equal(row.vt_is_delay, true);
  assert.deepEqual([...await db.sql`select * from pgmq.read('jobs', 30, 10)`], []);
});

Deno.test("send() takes vt from clock_timestamp() and enqueued_at from now()", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;

  const [row] = await db.sql.begin(async (tx) => {
    await tx`select pgmq.send('jobs', '{"n": 1}')`;
    await tx`select pg_sleep(0.01)`;
    await tx`select pgmq.send('jobs', '{"n": 2}', 0)`;
    return await tx`
      select bool_and(enqueued_at = now()) as enqueued_at_now,
        bool_and(vt > now()) as vt_after_now,
        (select vt from pgmq.q_jobs where msg_id = 2) > (select vt from pgmq.q_jobs where msg_id = 1)
          as vt_increases
      from pgmq.q_jobs
    `;
  });

  assert.deepEqual({ ...row }, { enqueued_at_now: true, vt_after_now: true, vt_increases: true });
});

Deno.test("read() sees a message sent earlier in the same transaction", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;

  const read = await db.sql.begin(async (tx) => {
    await tx`select pgmq.send('jobs', '{"n": 1}')`;
    return await tx`select msg_id from pgmq.read('jobs', 30, 10)`;
  });

  assert.deepEqual(read.map((r) => r.msg_id), ["1"]);
});

Deno.test("send_batch() returns ids in input order, each matching its message", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;
  const messages = Array.from({ length: 20 }, (_, i) => ({ position: i }));

  const ids =
    (await db.sql`select * from pgmq.send_batch('jobs', ${jsonbArray(db.sql, messages)}::jsonb[])`)
      .map((r) => r.send_batch as string);

  assert.equal(ids.length, 20);
  const numeric = ids.map((id) => BigInt(id));
  assert.ok(numeric.every((id, i) => i === 0 || id > numeric[i - 1]), `ids ascend: ${ids}`);
  const stored = await db
    .sql`select msg_id, message from pgmq.q_jobs where msg_id = any(${ids}::bigint[])`;
  const byId = new Map(stored.map((r) => [r.msg_id as string, r.message]));
  assert.deepEqual(ids.map((id) => byId.get(id)), messages);
});

Deno.test("send_batch() gives the whole batch one vt and one enqueued_at", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;
  const messages = Array.from({ length: 200 }, (_, i) => ({ i }));

  await db.sql`select pgmq.send_batch('jobs', ${jsonbArray(db.sql, messages)}::jsonb[])`;
  await db.sql`select pgmq.send_batch('jobs', ${jsonbArray(db.sql, messages)}::jsonb[], 5)`;

  const rows = await db.sql`
    select count(distinct vt)::int as vts, count(distinct enqueued_at)::int as enqueued
    from pgmq.q_jobs group by msg_id <= 200 order by 1
  `;
  assert.deepEqual(rows.map((r) => ({ ...r })), [{ vts: 1, enqueued: 1 }, { vts: 1, enqueued: 1 }]);
});

Deno.test("send_batch() with an empty array inserts nothing and consumes no id", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;

  const ids = await db.sql`select * from pgmq.send_batch('jobs', array[]::jsonb[])`;

  assert.deepEqual([...ids], []);
  const [metrics] = await db.sql`select queue_length, total_messages from pgmq.metrics('jobs')`;
  assert.deepEqual({ ...metrics }, { queue_length: "0", total_messages: "0" });
});

Deno.test("send_batch() overloads apply headers and delays to every message", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;
  const msgs = [{ m: 1 }, { m: 2 }];
  const headers = [{ h: 1 }, { h: 2 }];
  const later = "2999-01-01T00:00:00Z";

  await db.sql`select pgmq.send_batch('jobs', ${jsonbArray(db.sql, msgs)}::jsonb[])`;
  await db.sql`select pgmq.send_batch('jobs', ${jsonbArray(db.sql, msgs)}::jsonb[], ${
    jsonbArray(db.sql, headers)
  }::jsonb[])`;
  await db.sql`select pgmq.send_batch('jobs', ${jsonbArray(db.sql, msgs)}::jsonb[], 3600)`;
  await db.sql`select pgmq.send_batch('jobs', ${
    jsonbArray(db.sql, msgs)
  }::jsonb[], ${later}::timestamptz)`;
  await db.sql`select pgmq.send_batch('jobs', ${jsonbArray(db.sql, msgs)}::jsonb[], ${
    jsonbArray(db.sql, headers)
  }::jsonb[], 3600)`;
  await db.sql`
    select pgmq.send_batch('jobs', ${jsonbArray(db.sql, msgs)}::jsonb[], ${
    jsonbArray(db.sql, headers)
  }::jsonb[], ${later}::timestamptz)
  `;

  const rows = await db.sql`
    select message, headers,
      case
        when vt = ${later}::timestamptz then 'at'
        when vt > now() + interval '3500 seconds' then 'delayed'
        when vt <= clock_timestamp() then 'visible'
      end as visibility
    from pgmq.q_jobs order by msg_id
  `;
  const pairs = (h: unknown[] | null, visibility: string) =>
    msgs.map((message, i) => ({ message, headers: h ? h[i] : null, visibility }));
  assert.deepEqual(rows.map((r) => ({ ...r })), [
    ...pairs(null, "visible"),
    ...pairs(headers, "visible"),
    ...pairs(null, "delayed"),
    ...pairs(null, "at"),
    ...pairs(headers, "delayed"),
    ...pairs(headers, "at"),
  ]);
});

Deno.test("send_batch() pads missing headers with null", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;

  const twoMessages = jsonbArray(db.sql, [{ m: 1 }, { m: 2 }]);
  const oneHeader = jsonbArray(db.sql, [{ h: 1 }]);
  await db.sql`select pgmq.send_batch('jobs', ${twoMessages}::jsonb[], ${oneHeader}::jsonb[])`;
  await db.sql`select pgmq.send_batch('jobs', array['{"m": 3}']::jsonb[], null::jsonb[])`;

  const rows = await db.sql`select message, headers from pgmq.q_jobs order by msg_id`;
  assert.deepEqual(rows.map((r) => ({ ...r })), [
    { message: { m: 1 }, headers: { h: 1 } },
    { message: { m: 2 }, headers: null },
    { message: { m: 3 }, headers: null },
  ]);
});
