// Issue 43 finding 2: sluice's queue tables can be extended by nobody but their owner. Supabase
// Queues' style grants hand TRIGGER on every new pgmq table to their roles; grant_access and the
// compilation take it back, and a queue table a role made in advance is refused, not adopted.
import assert from "node:assert/strict";
import postgres, { type Sql } from "postgres";
import { migrate, MIGRATIONS_DIRECTORY } from "../../src/migrations/migrate.ts";
import { freshDatabase, loginWithUrlPassword, type TestDatabase } from "../_db.ts";
import { compileFlow, startFlow } from "./_fixtures.ts";

/** A login role of this test's own; `drop` removes it and what it owns. */
async function grantedRole(
  db: TestDatabase,
): Promise<{ name: string; sql: Sql; drop(): Promise<void> }> {
  const name = `sluice_queue_grantee_${crypto.randomUUID().slice(0, 8)}`;
  await db.sql.unsafe(`create role ${name} ${loginWithUrlPassword(db.url)}`);
  const parsed = new URL(db.url);
  parsed.username = name;
  const sql = postgres(parsed.href, { max: 1, onnotice: () => {} });
  return {
    name,
    sql,
    async drop() {
      await sql.end();
      await db.sql.unsafe(`drop owned by ${name} cascade`);
      await db.sql.unsafe(`drop role ${name}`);
    },
  };
}

const denied = (error: { code?: string }) => error.code === "42501";

/** Which of TRIGGER and REFERENCES `role` holds on `table`. */
async function extending(sql: Sql, role: string, table: string): Promise<string[]> {
  const held: string[] = [];
  for (const privilege of ["trigger", "references"]) {
    const [{ yes }] = await sql`select has_table_privilege(${role}, ${table}, ${privilege}) as yes`;
    if (yes) held.push(`${privilege} on ${table}`);
  }
  return held;
}

Deno.test("TRIGGER and REFERENCES that Supabase Queues' style grants give on queue tables are taken back: by grant_access for queues that exist, by compilation for new ones", async () => {
  await using db = await freshDatabase();
  const grantee = await grantedRole(db);
  const passedTo = `sluice_zz_${crypto.randomUUID().slice(0, 8)}`;
  await db.sql.unsafe(`create role ${passedTo} nologin`);
  try {
    // As Supabase Queues' "expose queues" does, run by the owner of sluice's objects; with the
    // grant option, so the grantee passes TRIGGER on to PUBLIC itself.
    await db.sql.unsafe(`
      grant usage on schema pgmq to ${grantee.name};
      alter default privileges in schema pgmq grant all on tables to ${grantee.name}
        with grant option;`);
    await compileFlow(db.sql, { slug: "before_grant", steps: [{ slug: "only" }] });
    // Its grant on the tables that exist (compilation restricted them as it created them), as
    // on a database that had the queue before this fix; passed on to a role whose name sorts
    // after the grantee's, and to PUBLIC.
    await db.sql.unsafe(
      `grant all on all tables in schema pgmq to ${grantee.name} with grant option`,
    );
    await grantee.sql.unsafe(`grant trigger on pgmq.q_before_grant to public, ${passedTo}`);
    await db.sql`select sluice.grant_access(${grantee.name})`;
    // Supabase lets service_role create in public; a trigger function could live there.
    await db.sql.unsafe(`grant create on schema public to ${grantee.name}`);
    await compileFlow(db.sql, { slug: "after_grant", steps: [{ slug: "only" }] });
    const held: string[] = [];
    for (const queue of ["before_grant", "after_grant"]) {
      for (const prefix of ["q", "a"]) {
        for (const role of [grantee.name, passedTo, "public"]) {
          held.push(...await extending(db.sql, role, `pgmq.${prefix}_${queue}`));
        }
      }
    }
    assert.deepEqual(held, []);

    await grantee.sql.unsafe(`
      create function public.hijack() returns trigger language plpgsql as $$
      begin raise exception 'hijacked as %', current_user; end $$`);
    for (const queue of ["before_grant", "after_grant"]) {
      await assert.rejects(
        grantee.sql.unsafe(
          `create trigger hijack after insert on pgmq.q_${queue} for each row execute function public.hijack()`,
        ),
        denied,
      );
      await assert.rejects(
        grantee.sql.unsafe(
          `create table public.pin_${queue} (id bigint references pgmq.q_${queue} (msg_id))`,
        ),
        denied,
      );
    }
    // Rows stay the grantee's to read and write, as grant_access promises.
    assert.ok(await startFlow(grantee.sql, "after_grant", {}));
    const [{ messages }] = await grantee
      .sql`select count(*)::int as messages from pgmq.q_after_grant`;
    assert.equal(messages, 1);
  } finally {
    await grantee.drop();
    await db.sql.unsafe(`drop owned by ${passedTo}`);
    await db.sql.unsafe(`drop role ${passedTo}`);
  }
});

Deno.test("a queue table a role created in advance in pgmq is refused by compilation, naming the queue, the table and its owner; nothing is written", async () => {
  await using db = await freshDatabase();
  const grantee = await grantedRole(db);
  try {
    await db.sql`select sluice.grant_access(${grantee.name})`;
    await db.sql.unsafe(`grant create on schema pgmq to ${grantee.name}`);
    for (
      const [slug, table] of [["premade", "q_premade"], ["premade_archive", "a_premade_archive"]]
    ) {
      // PGMQ 1.5.1's layout, so that PGMQ's `create table if not exists` takes it as its own.
      await grantee.sql.unsafe(`
        create table pgmq.${table} (
          msg_id bigint primary key generated always as identity,
          read_ct integer default 0 not null,
          enqueued_at timestamptz default now() not null,
          ${table.startsWith("a_") ? "archived_at timestamptz default now() not null," : ""}
          vt timestamptz not null,
          message jsonb,
          headers jsonb
        )`);
      await assert.rejects(
        compileFlow(db.sql, { slug, steps: [{ slug: "only" }] }),
        (error: Error) => {
          assert.match(
            error.message,
            new RegExp(
              `Cannot compile flow "${slug}": queue "${slug}" cannot be created: table pgmq\\.${table} already exists \\(owned by role "${grantee.name}"\\) but PGMQ's registry pgmq\\.meta has no queue "${slug}"`,
            ),
          );
          return true;
        },
      );
      const [state] = await db.sql`
        select
          (select count(*)::int from sluice.flows where flow_slug = ${slug}) as flows,
          (select count(*)::int from pgmq.meta where queue_name = ${slug}) as meta,
          (select relowner::regrole::text from pg_class
            where oid = ${`pgmq.${table}`}::regclass) as owner`;
      assert.deepEqual({ ...state }, { flows: 0, meta: 0, owner: grantee.name });
    }
  } finally {
    await grantee.drop();
  }
});

Deno.test("the migration names a trigger another role's function put on a queue table before it: revoking TRIGGER leaves the trigger", async () => {
  await using db = await freshDatabase({ empty: true });
  // The migrations before this fix, from a directory of their own.
  const before = await Deno.makeTempDir({ prefix: "sluice_before_queue_tables_" });
  const grantee = await grantedRole(db);
  try {
    for await (const entry of Deno.readDir(MIGRATIONS_DIRECTORY)) {
      if (entry.name.endsWith(".sql") && entry.name < "20261207000450") {
        await Deno.copyFile(new URL(entry.name, MIGRATIONS_DIRECTORY), `${before}/${entry.name}`);
      }
    }
    await migrate(db.sql, { directory: before });
    await compileFlow(db.sql, { slug: "legacy", steps: [{ slug: "only" }] });
    await db.sql.unsafe(`
      grant usage on schema pgmq to ${grantee.name};
      grant trigger on pgmq.q_legacy to ${grantee.name};
      grant create on schema public to ${grantee.name};`);
    await grantee.sql.unsafe(`
      create function public.hijack() returns trigger language plpgsql as $$
      begin return new; end $$;
      create trigger hijack after insert on pgmq.q_legacy
      for each row execute function public.hijack();`);

    const notices: string[] = [];
    const notified = postgres(db.url, {
      max: 1,
      onnotice: (notice) => notices.push(`${notice.severity}: ${notice.message}`),
    });
    try {
      const { applied } = await migrate(notified);
      assert.equal(applied[0], "20261207000450_sluice_queue_tables.sql");
    } finally {
      await notified.end();
    }
    assert.deepEqual(notices.filter((notice) => notice.includes("pgmq.q_legacy")), [
      `WARNING: Queue table pgmq.q_legacy has trigger "hijack", whose function role "${grantee.name}" owns: it runs as whoever writes the queue, sluice's security definer functions included`,
    ]);
    assert.deepEqual(await extending(db.sql, grantee.name, "pgmq.q_legacy"), []);
  } finally {
    await grantee.drop();
    await Deno.remove(before, { recursive: true });
  }
});
