import assert from "node:assert/strict";
import { MIGRATIONS_DIRECTORY } from "../../src/migrations/migrate.ts";
import { freshDatabase, installedPgmq } from "../_db.ts";

// Supabase's own runner applies this file without sluice's installer running first. Whether the
// server offers the extension decides which branch runs: `deno task test` covers the error,
// `SLUICE_TEST_PGMQ=extension deno task test` the `create extension`.
const migration = await Deno.readTextFile(
  new URL("20261130000000_pgmq_extension.sql", MIGRATIONS_DIRECTORY),
);
const offersExtension = installedPgmq() === "extension";

async function extensionCount(sql: import("postgres").Sql): Promise<number> {
  const [row] = await sql`select count(*)::int as n from pg_extension where extname = 'pgmq'`;
  return row.n;
}

Deno.test({
  name: "the first migration fails clearly where PGMQ is neither installed nor available",
  ignore: offersExtension, // this server offers the extension: the next test covers it
  async fn() {
    await using db = await freshDatabase({ empty: true });
    await assert.rejects(db.sql.unsafe(migration), {
      message:
        "sluice requires PGMQ, but the pgmq extension is neither installed nor available on this " +
        'server; install PGMQ >= 1.5 on the server, or apply the migrations with "deno task ' +
        "sluice migrate\", which installs sluice's PGMQ-compatible layer first",
    });
  },
});

Deno.test({
  name: "the first migration creates the pgmq extension where the server offers it",
  ignore: !offersExtension, // needs a server with the extension: SLUICE_TEST_PGMQ=extension
  async fn() {
    await using db = await freshDatabase({ empty: true });
    await db.sql.unsafe(migration);
    assert.equal(await extensionCount(db.sql), 1);
    await db.sql`select pgmq.create('jobs')`;
    const [sent] = await db.sql`select * from pgmq.send('jobs', '{}'::jsonb, '{"h": 1}'::jsonb)`;
    const [read] = await db.sql`select msg_id, headers from pgmq.read('jobs', 30, 1)`;
    assert.deepEqual({ ...read }, { msg_id: sent.send, headers: { h: 1 } });
  },
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
  const objects = async () => {
    const [row] = await db.sql`
      select (select count(*) from pg_extension where extname = 'pgmq')::int as extensions,
        (select count(*) from pg_proc where pronamespace = 'pgmq'::regnamespace)::int as functions,
        (select count(*) from pg_class where relnamespace = 'pgmq'::regnamespace)::int as relations
    `;
    return { ...row };
  };
  const before = await objects();
  // The template has the extension where the server offers it, else the compat layer (no extension).
  assert.equal(before.extensions, offersExtension ? 1 : 0);
  await db.sql.unsafe(migration);
  assert.deepEqual(await objects(), before);
});
