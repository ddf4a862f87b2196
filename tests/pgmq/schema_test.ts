// Layout conformance: the objects sluice and its users see must match PGMQ 1.5.1 exactly, whether
// they come from the extension or from src/migrations/pgmq_compat.sql.
import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import type { Sql } from "./_pgmq.ts";

async function columns(sql: Sql, table: string) {
  return await sql`
    select column_name, data_type, is_nullable, column_default, is_identity, identity_generation
    from information_schema.columns
    where table_schema = 'pgmq' and table_name = ${table}
    order by ordinal_position
  `;
}

async function indexes(sql: Sql, table: string): Promise<string[]> {
  const rows = await sql<{ indexdef: string }[]>`
    select indexdef from pg_indexes where schemaname = 'pgmq' and tablename = ${table}
    order by indexname
  `;
  return rows.map((r) => r.indexdef);
}

async function attributes(sql: Sql, type: string): Promise<string[]> {
  const rows = await sql<{ attribute: string }[]>`
    select attname || ' ' || format_type(atttypid, atttypmod) as attribute
    from pg_attribute
    where attrelid = ${type}::regclass and attnum > 0 and not attisdropped
    order by attnum
  `;
  return rows.map((r) => r.attribute);
}

function column(
  name: string,
  type: string,
  nullable: boolean,
  defaultValue: string | null,
  identity: "ALWAYS" | null = null,
) {
  return {
    column_name: name,
    data_type: type,
    is_nullable: nullable ? "YES" : "NO",
    column_default: defaultValue,
    is_identity: identity ? "YES" : "NO",
    identity_generation: identity,
  };
}

const tz = "timestamp with time zone";

Deno.test("create() makes q_<name> with the PGMQ columns, order, defaults and vt index", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;

  assert.deepEqual([...await columns(db.sql, "q_jobs")], [
    column("msg_id", "bigint", false, null, "ALWAYS"),
    column("read_ct", "integer", false, "0"),
    column("enqueued_at", tz, false, "now()"),
    column("vt", tz, false, null),
    column("message", "jsonb", true, null),
    column("headers", "jsonb", true, null),
  ]);
  assert.deepEqual(await indexes(db.sql, "q_jobs"), [
    "CREATE UNIQUE INDEX q_jobs_pkey ON pgmq.q_jobs USING btree (msg_id)",
    "CREATE INDEX q_jobs_vt_idx ON pgmq.q_jobs USING btree (vt)",
  ]);
});

Deno.test("create() makes a_<name> with the PGMQ columns, order, defaults and archived_at index", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('jobs')`;

  assert.deepEqual([...await columns(db.sql, "a_jobs")], [
    column("msg_id", "bigint", false, null),
    column("read_ct", "integer", false, "0"),
    column("enqueued_at", tz, false, "now()"),
    column("archived_at", tz, false, "now()"),
    column("vt", tz, false, null),
    column("message", "jsonb", true, null),
    column("headers", "jsonb", true, null),
  ]);
  assert.deepEqual(await indexes(db.sql, "a_jobs"), [
    "CREATE UNIQUE INDEX a_jobs_pkey ON pgmq.a_jobs USING btree (msg_id)",
    "CREATE INDEX archived_at_idx_jobs ON pgmq.a_jobs USING btree (archived_at)",
  ]);
});

Deno.test("pgmq.meta has the PGMQ columns and a unique queue_name", async () => {
  await using db = await freshDatabase();

  assert.deepEqual([...await columns(db.sql, "meta")], [
    column("queue_name", "character varying", false, null),
    column("is_partitioned", "boolean", false, null),
    column("is_unlogged", "boolean", false, null),
    column("created_at", tz, false, "now()"),
  ]);
  const [unique] = await db.sql`
    select count(*)::int as n from pg_indexes
    where schemaname = 'pgmq' and tablename = 'meta' and indexdef like 'CREATE UNIQUE INDEX %(queue_name)'
  `;
  assert.equal(unique.n, 1);
});

Deno.test("message_record has attributes msg_id, read_ct, enqueued_at, vt, message, headers in order", async () => {
  await using db = await freshDatabase();

  assert.deepEqual(await attributes(db.sql, "pgmq.message_record"), [
    "msg_id bigint",
    "read_ct integer",
    `enqueued_at ${tz}`,
    `vt ${tz}`,
    "message jsonb",
    "headers jsonb",
  ]);
});

Deno.test("queue_record and metrics_result have the PGMQ attributes in order", async () => {
  await using db = await freshDatabase();

  assert.deepEqual(await attributes(db.sql, "pgmq.queue_record"), [
    "queue_name character varying",
    "is_partitioned boolean",
    "is_unlogged boolean",
    `created_at ${tz}`,
  ]);
  assert.deepEqual(await attributes(db.sql, "pgmq.metrics_result"), [
    "queue_name text",
    "queue_length bigint",
    "newest_msg_age_sec integer",
    "oldest_msg_age_sec integer",
    "total_messages bigint",
    `scrape_time ${tz}`,
    "queue_visible_length bigint",
  ]);
});

// Parameter names and defaults are part of the contract: callers may use named notation
// (`pgmq.read(queue_name => ..., vt => ..., qty => ...)`).
const signatures = [
  "format_table_name(queue_name text, prefix text) -> text",
  "validate_queue_name(queue_name text) -> void",
  "create(queue_name text) -> void",
  "create_non_partitioned(queue_name text) -> void",
  "create_unlogged(queue_name text) -> void",
  "drop_queue(queue_name text) -> boolean",
  "drop_queue(queue_name text, partitioned boolean) -> boolean",
  "detach_archive(queue_name text) -> void",
  "purge_queue(queue_name text) -> bigint",
  "list_queues() -> SETOF pgmq.queue_record",
  "metrics(queue_name text) -> pgmq.metrics_result",
  "metrics_all() -> SETOF pgmq.metrics_result",
  "send(queue_name text, msg jsonb) -> SETOF bigint",
  "send(queue_name text, msg jsonb, headers jsonb) -> SETOF bigint",
  "send(queue_name text, msg jsonb, delay integer) -> SETOF bigint",
  `send(queue_name text, msg jsonb, delay ${tz}) -> SETOF bigint`,
  "send(queue_name text, msg jsonb, headers jsonb, delay integer) -> SETOF bigint",
  `send(queue_name text, msg jsonb, headers jsonb, delay ${tz}) -> SETOF bigint`,
  "send_batch(queue_name text, msgs jsonb[]) -> SETOF bigint",
  "send_batch(queue_name text, msgs jsonb[], headers jsonb[]) -> SETOF bigint",
  "send_batch(queue_name text, msgs jsonb[], delay integer) -> SETOF bigint",
  `send_batch(queue_name text, msgs jsonb[], delay ${tz}) -> SETOF bigint`,
  "send_batch(queue_name text, msgs jsonb[], headers jsonb[], delay integer) -> SETOF bigint",
  `send_batch(queue_name text, msgs jsonb[], headers jsonb[], delay ${tz}) -> SETOF bigint`,
  "read(queue_name text, vt integer, qty integer, conditional jsonb DEFAULT '{}'::jsonb) -> " +
  "SETOF pgmq.message_record",
  "read_with_poll(queue_name text, vt integer, qty integer, max_poll_seconds integer DEFAULT 5, " +
  "poll_interval_ms integer DEFAULT 100, conditional jsonb DEFAULT '{}'::jsonb) -> " +
  "SETOF pgmq.message_record",
  "pop(queue_name text) -> SETOF pgmq.message_record",
  "set_vt(queue_name text, msg_id bigint, vt integer) -> SETOF pgmq.message_record",
  "archive(queue_name text, msg_id bigint) -> boolean",
  "archive(queue_name text, msg_ids bigint[]) -> SETOF bigint",
  "delete(queue_name text, msg_id bigint) -> boolean",
  "delete(queue_name text, msg_ids bigint[]) -> SETOF bigint",
];

Deno.test("every PGMQ 1.5.1 function sluice relies on exists with its exact signature", async () => {
  await using db = await freshDatabase();
  // Pin search_path so pg_get_function_* qualify pgmq types the same way on every server.
  const rows = await db.sql.begin(async (tx) => {
    await tx`set local search_path = public`;
    return await tx<{ signature: string }[]>`
      select p.proname || '(' || pg_get_function_arguments(p.oid) || ') -> '
        || pg_get_function_result(p.oid) as signature
      from pg_proc p
      where p.pronamespace = 'pgmq'::regnamespace
    `;
  });
  const present = new Set(rows.map((r) => r.signature));

  assert.deepEqual(signatures.filter((s) => !present.has(s)), []);
});
