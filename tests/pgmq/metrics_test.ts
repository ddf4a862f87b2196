// Metrics: lengths, ages and the all-time message count, measured with now().
import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";

Deno.test("metrics() of a queue that never had a message reports zeros and null ages", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;

  const [row] = await db.sql`
    select queue_name, queue_length, queue_visible_length, newest_msg_age_sec, oldest_msg_age_sec,
      total_messages, scrape_time = now() as scraped_now
    from pgmq.metrics('jobs')
  `;

  assert.deepEqual({ ...row }, {
    queue_name: "jobs",
    queue_length: "0",
    queue_visible_length: "0",
    newest_msg_age_sec: null,
    oldest_msg_age_sec: null,
    total_messages: "0",
    scraped_now: true,
  });
});

Deno.test("metrics() counts queued and visible messages and every message ever sent", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;
  await db.sql`select pgmq.send_batch('jobs', array['{}', '{}', '{}', '{}']::jsonb[])`;
  await db.sql`select pgmq.send('jobs', '{}', 3600)`;
  await db.sql`select pgmq.delete('jobs', 1::bigint)`;
  await db.sql`select pgmq.archive('jobs', 2::bigint)`;

  const [row] = await db.sql`
    select queue_length, queue_visible_length, total_messages from pgmq.metrics('jobs')
  `;

  assert.deepEqual({ ...row }, {
    queue_length: "3",
    queue_visible_length: "2",
    total_messages: "5",
  });
});

Deno.test("metrics() reports message ages in whole seconds from now()", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;
  await db.sql`select pgmq.send_batch('jobs', array['{}', '{}']::jsonb[])`;
  await db.sql`update pgmq.q_jobs set enqueued_at = now() - interval '90 seconds' where msg_id = 1`;
  await db.sql`update pgmq.q_jobs set enqueued_at = now() - interval '30 seconds' where msg_id = 2`;

  const [row] = await db
    .sql`select newest_msg_age_sec, oldest_msg_age_sec from pgmq.metrics('jobs')`;

  assert.deepEqual({ ...row }, { newest_msg_age_sec: 30, oldest_msg_age_sec: 90 });
});

Deno.test("metrics() judges visibility by now(), so a message sent in the same transaction is not yet visible", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;

  const [row] = await db.sql.begin(async (tx) => {
    await tx`select pgmq.send('jobs', '{}')`;
    return await tx`
      select queue_length, queue_visible_length, newest_msg_age_sec from pgmq.metrics('jobs')
    `;
  });

  assert.deepEqual({ ...row }, {
    queue_length: "1",
    queue_visible_length: "0",
    newest_msg_age_sec: 0,
  });
});

Deno.test("metrics() reports the queue name as passed", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('Jobs')`;

  const [row] = await db.sql`select queue_name from pgmq.metrics('JOBS')`;

  assert.equal(row.queue_name, "JOBS");
});

Deno.test("metrics_all() returns one row per queue", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('a')`;
  await db.sql`select pgmq.create('b')`;
  await db.sql`select pgmq.send('b', '{}')`;

  const rows = await db.sql`
    select queue_name, queue_length, total_messages from pgmq.metrics_all() where queue_name in ('a', 'b')
    order by queue_name
  `;

  assert.deepEqual(rows.map((r) => ({ ...r })), [
    { queue_name: "a", queue_length: "0", total_messages: "0" },
    { queue_name: "b", queue_length: "1", total_messages: "1" },
  ]);
});
