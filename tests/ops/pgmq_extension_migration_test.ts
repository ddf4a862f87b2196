import assert from "node:assert/strict";
import { MIGRATIONS_DIRECTORY } from "../../src/ops/migrate.ts";
import { freshDatabase } from "../_db.ts";

// Supabase's own runner applies this file without sluice's installer running first.
const migration = await Deno.readTextFile(
  new URL("20261130000000_pgmq_extension.sql", MIGRATIONS_DIRECTORY),
);

Deno.test("the first migration fails clearly where PGMQ is neither installed nor available", async () => {
  await using db = await freshDatabase({ empty: true });
  await assert.rejects(db.sql.unsafe(migration), {
    message:
      "sluice requires PGMQ, but the pgmq extension is neither installed nor available on this server",
  });
});

Deno.test("the first migration rejects PGMQ older than 1.5", async () => {
  await using db = await freshDatabase({ empty: true });
  // PGMQ 1.4's message_record: no headers attribute.
  await db.sql.unsafe(`
    create schema pgmq;
    create type pgmq.message_record as (
      msg_id bigint, read_ct integer, enqueued_at timestamptz, vt timestamptz, message jsonb
    );
  `);
  await assert.rejects(db.sql.unsafe(migration), {
    message:
      "sluice requires PGMQ >= 1.5 (pgmq.message_record has no headers attribute); upgrade the pgmq extension",
  });
});

Deno.test("the first migration accepts an installed PGMQ 1.5 and creates nothing", async () => {
  await using db = await freshDatabase();
  await db.sql.unsafe(migration);
  const [extension] = await db
    .sql`select count(*)::int as n from pg_extension where extname = 'pgmq'`;
  assert.equal(extension.n, 0);
});
