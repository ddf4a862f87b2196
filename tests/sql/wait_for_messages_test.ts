// sluice.wait_for_messages: the wait of the poll connection that wakes co-hosted workers without
// LISTEN. It returns the queues with a visible message, counts a missing queue as ready (its
// worker's read reports it gone), sees a message committed while it waits, and ignores hidden ones.
import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import { waitUntil } from "../_support.ts";

Deno.test("wait_for_messages returns the queues with a visible message, a missing queue as ready, and nothing when the time is up", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('wfm_a'), pgmq.create('wfm_b')`;

  const [empty] = await db.sql`
    select to_jsonb(sluice.wait_for_messages(array['wfm_a', 'wfm_b'], 0, 10)) as ready`;
  assert.deepEqual(empty.ready, [], "no message: nothing once the time is up");

  await db.sql`select pgmq.send('wfm_b', '{}'::jsonb)`;
  const [ready] = await db.sql`
    select to_jsonb(sluice.wait_for_messages(array['wfm_a', 'wfm_b', 'wfm_gone'], 5, 10)) as ready`;
  assert.deepEqual(ready.ready, ["wfm_b", "wfm_gone"]);

  // A message a read hid is not visible: the wait does not end for it.
  await db.sql`select * from pgmq.read('wfm_b', 60, 1)`;
  const [hidden] = await db.sql`
    select to_jsonb(sluice.wait_for_messages(array['wfm_b'], 0, 10)) as ready`;
  assert.deepEqual(hidden.ready, []);
});

Deno.test("wait_for_messages sees a message committed while it waits", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('wfm_later')`;
  const waiting = db.sql`
    select to_jsonb(sluice.wait_for_messages(array['wfm_later'], 30, 20)) as ready`.execute();
  await waitUntil(async () => {
    const [{ n }] = await db.sql`
      select count(*)::int as n from pg_stat_activity
      where datname = current_database() and state = 'active'
        and query like '%wait_for_messages(array[''wfm_later'']%' and pid <> pg_backend_pid()`;
    return n > 0;
  }, "the wait to be under way");
  await db.sql`select pgmq.send('wfm_later', '{}'::jsonb)`;
  const [row] = await waiting;
  assert.deepEqual(row.ready, ["wfm_later"]);
});

Deno.test("wait_for_messages refuses a negative or null duration and a check interval below 1 ms, naming the value", async () => {
  await using db = await freshDatabase();
  await assert.rejects(
    db.sql`select sluice.wait_for_messages(array['q'], -1, 100)`,
    /max_seconds must be an integer >= 0, got -1/,
  );
  await assert.rejects(
    db.sql`select sluice.wait_for_messages(array['q'], null, 100)`,
    /max_seconds must be an integer >= 0, got null/,
  );
  await assert.rejects(
    db.sql`select sluice.wait_for_messages(array['q'], 1, 0)`,
    /interval_ms must be an integer >= 1, got 0/,
  );
});
