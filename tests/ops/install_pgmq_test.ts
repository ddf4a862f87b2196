import assert from "node:assert/strict";
import { choosePgmqInstall, detectPgmq, installPgmq } from "../../src/ops/install_pgmq.ts";
import { freshDatabase } from "../_db.ts";

Deno.test("choosePgmqInstall() prefers the real extension and never installs over an existing PGMQ", () => {
  assert.equal(choosePgmqInstall({ present: false, available: true }), "extension");
  assert.equal(choosePgmqInstall({ present: false, available: false }), "compat");
  assert.equal(choosePgmqInstall({ present: true, available: true }), "present");
  assert.equal(choosePgmqInstall({ present: true, available: false }), "present");
});

Deno.test("installPgmq() installs the compat layer only because this server does not offer the extension", async () => {
  await using db = await freshDatabase({ empty: true });
  const before = await detectPgmq(db.sql);
  // The reason for the compat path on this server: no pgmq among the available extensions.
  assert.deepEqual(before, { present: false, available: false });
  const [listed] = await db
    .sql`select count(*)::int as n from pg_available_extensions where name = 'pgmq'`;
  assert.equal(listed.n, 0);

  assert.equal(await installPgmq(db.sql), "compat");
  assert.deepEqual(await detectPgmq(db.sql), { present: true, available: false });
  await db.sql`select pgmq.create('jobs')`;
  const [sent] = await db.sql`select * from pgmq.send('jobs', '{"n": 1}'::jsonb)`;
  assert.equal(sent.send, "1");
});

Deno.test("installPgmq() leaves an installed PGMQ untouched", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('kept')`;
  await db.sql`select pgmq.send('kept', '{"n": 1}'::jsonb)`;
  assert.equal(await installPgmq(db.sql), "present");
  const [queue] = await db.sql`select count(*)::int as n from pgmq.q_kept`;
  assert.equal(queue.n, 1);
  const [extension] = await db
    .sql`select count(*)::int as n from pg_extension where extname = 'pgmq'`;
  assert.equal(extension.n, 0);
});
