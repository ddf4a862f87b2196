// Acknowledging: archive and delete, single and array forms, and how they treat locked rows.
import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import { backendPid, waitUntilBlocked } from "./_pgmq.ts";

Deno.test("archive() moves a message with all its fields to a_<name>, stamped with now()", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;
  await db.sql`select pgmq.send('jobs', '{"n": 1}', '{"h": 1}'::jsonb)`;
  await db.sql`select pgmq.read('jobs', 30, 1)`;
  const [before] = await db.sql`
    select msg_id, read_ct, enqueued_at::text, vt::text, message, headers from pgmq.q_jobs
  `;

  const [result] = await db.sql.begin(async (tx) => {
    await tx`select pg_sleep(0.01)`;
    const [archive] = await tx`select pgmq.archive('jobs', 1::bigint) as moved`;
    const [stamp] = await tx`select archived_at = now() as at_now from pgmq.a_jobs`;
    return [{ moved: archive.moved, archivedAtNow: stamp.at_now }];
  });

  assert.deepEqual(result, { moved: true, archivedAtNow: true });
  const [after] = await db.sql`
    select msg_id, read_ct, enqueued_at::text, vt::text, message, headers,
      archived_at > enqueued_at as archived_later
    from pgmq.a_jobs
  `;
  assert.deepEqual({ ...after }, { ...before, archived_later: true });
  const [queued] = await db.sql`select count(*)::int as n from pgmq.q_jobs`;
  assert.equal(queued.n, 0);
});

Deno.test("archive() returns false for an unknown or already archived message", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;
  await db.sql`select pgmq.send('jobs', '{}')`;

  const results = [];
  for (const id of [1, 1, 99]) {
    const [row] = await db.sql`select pgmq.archive('jobs', ${id}::bigint) as moved`;
    results.push(row.moved);
  }

  assert.deepEqual(results, [true, false, false]);
});

Deno.test("archive(ids) returns only the ids it moved and ignores unknown ones", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;
  await db.sql`select pgmq.send_batch('jobs', array['{}', '{}', '{}']::jsonb[])`;

  const moved = await db.sql`select * from pgmq.archive('jobs', array[1, 3, 99]::bigint[])`;

  assert.deepEqual(moved.map((r) => r.archive).sort(), ["1", "3"]);
  const archived = await db.sql`select msg_id from pgmq.a_jobs order by msg_id`;
  assert.deepEqual(archived.map((r) => r.msg_id), ["1", "3"]);
  const queued = await db.sql`select msg_id from pgmq.q_jobs`;
  assert.deepEqual(queued.map((r) => r.msg_id), ["2"]);
  assert.deepEqual(
    [...await db.sql`select * from pgmq.archive('jobs', array[1, 3]::bigint[])`],
    [],
  );
});

Deno.test("delete() removes a message without archiving it and returns whether it existed", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;
  await db.sql`select pgmq.send('jobs', '{}')`;

  const results = [];
  for (const id of [1, 1, 99]) {
    const [row] = await db.sql`select pgmq.delete('jobs', ${id}::bigint) as deleted`;
    results.push(row.deleted);
  }

  assert.deepEqual(results, [true, false, false]);
  const [counts] = await db.sql`
    select (select count(*)::int from pgmq.q_jobs) as queued,
      (select count(*)::int from pgmq.a_jobs) as archived
  `;
  assert.deepEqual({ ...counts }, { queued: 0, archived: 0 });
});

Deno.test("delete(ids) returns only the ids it deleted and ignores unknown ones", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;
  await db.sql`select pgmq.send_batch('jobs', array['{}', '{}', '{}']::jsonb[])`;

  const deleted = await db.sql`select * from pgmq.delete('jobs', array[2, 3, 99]::bigint[])`;

  assert.deepEqual(deleted.map((r) => r.delete).sort(), ["2", "3"]);
  const queued = await db.sql`select msg_id from pgmq.q_jobs`;
  assert.deepEqual(queued.map((r) => r.msg_id), ["1"]);
});

for (const call of ["archive", "delete"]) {
  Deno.test(`${call}() waits for a reader's open transaction instead of skipping its row`, async () => {
    await using db = await freshDatabase();
    await db.sql`select pgmq.create('jobs')`;
    await db.sql`select pgmq.send_batch('jobs', array['{}', '{}']::jsonb[])`;
    const reader = db.connect(1);
    const acker = db.connect(1);
    const ackerPid = await backendPid(acker);

    await reader`begin`;
    await reader`select * from pgmq.read('jobs', 30, 1)`;
    const single = acker`select pgmq.${acker(call)}('jobs', 1::bigint) as done`.execute();
    await waitUntilBlocked(db.sql, ackerPid);
    await reader`commit`;
    const [singleResult] = await single;

    await reader`begin`;
    await reader`select * from pgmq.read('jobs', 30, 1)`;
    const batch = acker`select * from pgmq.${acker(call)}('jobs', array[2]::bigint[]) as t(id)`
      .execute();
    await waitUntilBlocked(db.sql, ackerPid);
    await reader`commit`;
    const batchResult = await batch;

    assert.equal(singleResult.done, true);
    assert.deepEqual(batchResult.map((r) => r.id), ["2"]);
  });
}
