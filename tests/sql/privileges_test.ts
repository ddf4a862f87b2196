// Privileges as on Supabase: anon and authenticated reach nothing of sluice or pgmq, even with
// usage on both schemas; service_role (granted by the migrations when it exists) produces and
// runs workers.
import assert from "node:assert/strict";
import postgres, { type Sql } from "postgres";
import { compileFlow } from "../../src/client/compile_flow.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { Flow, signalPayload } from "../../src/dsl/flow.ts";
import { migrate } from "../../src/migrations/migrate.ts";
import { startWorker } from "../../src/worker/start_worker.ts";
import {
  adminUrl,
  freshDatabase,
  installedPgmq,
  loginWithUrlPassword,
  pgmqFlavour,
} from "../_db.ts";
import { definition } from "./_fixtures.ts";
import { testWorker, waitUntil } from "../worker/_helpers.ts";
import { scaled } from "../_support.ts";

const AUTHENTICATOR = "sluice_test_authenticator";

/**
 * Supabase's roles: nologin anon, authenticated and service_role, and a login role (Supabase's
 * authenticator) that is a member of all three without inheriting, so every session switches
 * with `set role`. Roles belong to the whole cluster: created once, kept.
 */
async function createSupabaseRoles(): Promise<void> {
  const admin = postgres(adminUrl(), { prepare: false, max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`
      do $$
      declare
        name text;
      begin
        foreach name in array array['anon', 'authenticated', 'service_role'] loop
          if not exists (select 1 from pg_roles where rolname = name) then
            execute format('create role %I nologin noinherit', name);
          end if;
        end loop;
        if not exists (select 1 from pg_roles where rolname = '${AUTHENTICATOR}') then
          create role ${AUTHENTICATOR} ${loginWithUrlPassword(adminUrl())} noinherit;
        end if;
      end;
      $$`);
    await admin.unsafe(`grant anon, authenticated, service_role to ${AUTHENTICATOR}`);
  } finally {
    await admin.end();
  }
}

/** A client logged in as the authenticator whose sessions all run as `role`. */
function connectAs(url: string, role: string, max = 4): Sql {
  const parsed = new URL(url);
  parsed.username = AUTHENTICATOR;
  return postgres(parsed.href, {
    prepare: false,
    max,
    onnotice: () => {},
    connection: { options: `-c role=${role}` },
  });
}

/** What anon and authenticated try: each fails with insufficient_privilege (42501). */
const DENIED = [
  `select sluice.start_flow('guarded', '{"n": 1}'::jsonb)`,
  "select sluice.requeue_stalled_tasks()",
  "select * from sluice.runs",
  "select * from sluice.route_coverage",
  "select * from pgmq.q_guarded",
  "select * from pgmq.meta",
  `select pgmq.send('guarded', '{}'::jsonb)`,
  "select * from pgmq.read('guarded', 30, 10)",
  "select * from pgmq.pop('guarded')",
  "select * from pgmq.set_vt('guarded', 1, 0)",
  "select pgmq.archive('guarded', 1::bigint)",
  "select pgmq.delete('guarded', 1::bigint)",
  "select pgmq.purge_queue('guarded')",
  "select pgmq.drop_queue('guarded')",
  "select pgmq.create('intruder')",
  "select * from pgmq.list_queues()",
  "select * from pgmq.metrics_all()",
];

const flow = new Flow<{ n: number }>({ slug: "guarded" })
  .step({ slug: "double" }, (input) => input.n * 2)
  .step({ slug: "report", dependsOn: ["double"] }, (deps) => ({ doubled: deps.double }));

Deno.test("anon and authenticated can neither read nor execute anything in sluice or pgmq; service_role produces and runs a worker", async () => {
  await createSupabaseRoles();
  // A database migrated where the Supabase roles exist, as on Supabase.
  await using db = await freshDatabase({ empty: true });
  await migrate(db.sql);
  await db.sql.unsafe("grant usage on schema sluice, pgmq to anon, authenticated");

  const service = connectAs(db.url, "service_role");
  try {
    const [{ current_user }] = await service`select current_user`;
    assert.equal(current_user, "service_role");
    const worker = await startWorker(flow, {
      sql: service,
      heartbeatIntervalMs: 100,
      stalledCheckIntervalMs: 100,
      logger: () => {},
      env: {},
    });
    const runId = await startFlow(service, flow, { n: 21 });
    assert.deepEqual(
      await waitForRun(service, runId, { timeoutMs: scaled(15_000), flow }),
      { report: { doubled: 42 } },
    );
    await worker.stop();
  } finally {
    await service.end();
  }
  await db.sql`select pgmq.send('guarded', '{}'::jsonb)`;

  const functions = await db.sql<{ signature: string }[]>`
    select p.oid::regprocedure::text as signature from pg_proc p
    join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'sluice'`;
  const relations = await db.sql<{ name: string; kind: string }[]>`
    select format('%I.%I', n.nspname, c.relname) as name, c.relkind::text as kind from pg_class c
    join pg_namespace n on n.oid = c.relnamespace
    where n.nspname in ('sluice', 'pgmq') and c.relkind in ('r', 'v', 'm', 'S', 'p')`;
  assert.ok(functions.length > 20 && relations.some((r) => r.name === "pgmq.q_guarded"));

  for (const role of ["anon", "authenticated"]) {
    for (const { signature } of functions) {
      const [{ allowed }] = await db.sql`
        select has_function_privilege(${role}, ${signature}, 'execute') as allowed`;
      assert.equal(allowed, false, `${role} may execute ${signature}`);
    }
    for (const { name, kind } of relations) {
      const privileges = kind === "S"
        ? "select, usage, update"
        : "select, insert, update, delete, truncate, references, trigger";
      const check = kind === "S" ? "has_sequence_privilege" : "has_table_privilege";
      const [{ allowed }] = await db.sql.unsafe(
        `select ${check}($1, $2, $3) as allowed`,
        [role, name, privileges],
      );
      assert.equal(allowed, false, `${role} holds a privilege on ${name}`);
    }

    const client = connectAs(db.url, role, 1);
    try {
      for (const statement of DENIED) {
        await assert.rejects(
          client.unsafe(statement),
          (error: { code?: string }) => error.code === "42501",
          `${role}: ${statement}`,
        );
      }
    } finally {
      await client.end();
    }
  }
  const [{ messages }] = await db.sql`select count(*)::int as messages from pgmq.q_guarded`;
  assert.equal(messages, 1, "the queue is as the admin left it");
});

Deno.test("after every migration no sluice function is executable by PUBLIC, and grant_access() needs a real role", async () => {
  await using db = await freshDatabase();
  const open = await db.sql`
    select p.oid::regprocedure::text as signature from pg_proc p
    join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = 'sluice' and has_function_privilege('public', p.oid, 'execute')`;
  assert.deepEqual(
    open.map((row) => row.signature),
    [],
    "a migration that creates a sluice function must revoke PUBLIC's EXECUTE on it",
  );
  const [{ granted }] = await db.sql`
    select has_function_privilege('public', 'sluice.grant_access(name)', 'execute') as granted`;
  assert.equal(granted, false);
  await assert.rejects(
    db.sql`select sluice.grant_access('no_such_role_here')`,
    /Cannot grant sluice access to role 'no_such_role_here': no such role/,
  );
});

Deno.test("sluice.grant_access() opens sluice to another role, including queues created later", async () => {
  await createSupabaseRoles();
  await using db = await freshDatabase();
  // A role of its own, created after the template: nothing can have been granted to it, whatever
  // roles the server had when the template was built (a reused DATABASE_URL server, Supabase).
  const grantee = `sluice_grantee_${crypto.randomUUID().slice(0, 8)}`;
  await db.sql.unsafe(`create role ${grantee} nologin noinherit`);
  await db.sql.unsafe(`grant ${grantee} to ${AUTHENTICATOR}`);
  const service = connectAs(db.url, grantee);
  try {
    const [{ before }] = await db.sql`
      select has_function_privilege(${grantee}, 'sluice.start_flow(text,jsonb,uuid)', 'execute')
        as before`;
    assert.equal(before, false);
    await db.sql`select sluice.grant_access(${grantee})`;
    // Compiled by the owner after the grant: the new queue tables follow the default privileges.
    const worker = await startWorker(flow, { sql: db.sql, logger: () => {}, env: {} });
    const runId = await startFlow(service, flow, { n: 2 });
    assert.deepEqual(await waitForRun(service, runId, { timeoutMs: scaled(15_000), flow }), {
      report: { doubled: 4 },
    });
    await worker.stop();
    const [{ count }] = await service`select count(*)::int from pgmq.a_guarded`;
    assert.equal(count, 2);
  } finally {
    await service.end();
    await db.sql.unsafe(`drop owned by ${grantee}`);
    await db.sql.unsafe(`drop role ${grantee}`);
  }
});

// Issue 26 finding 1: a granted role that compiled a flow owned its queue table, hung a trigger of
// its own on it, and the definer start_run's insert then ran that trigger with the definer's rights.
Deno.test("a granted role that compiles a flow owns no queue table and cannot hang a trigger on one (the start_run escalation)", async () => {
  await createSupabaseRoles();
  await using db = await freshDatabase();
  await db.sql`select sluice.grant_access('service_role')`;
  // Supabase lets service_role create in public; a trigger function could live there.
  await db.sql`grant create on schema public to service_role`;
  const service = connectAs(db.url, "service_role", 1);
  try {
    const worker = await startWorker(flow, { sql: service, logger: () => {}, env: {} });
    await worker.stop();
    const [{ owner }] = await db.sql`
      select relowner::regrole::text as owner from pg_class where oid = 'pgmq.q_guarded'::regclass`;
    assert.notEqual(owner, "service_role");
    const denied = (error: { code?: string }) => error.code === "42501";
    await assert.rejects(
      service.unsafe(
        "create function pgmq.hijack() returns trigger language plpgsql as $$ begin return new; end $$",
      ),
      denied,
    );
    await service.unsafe(`
      create function public.hijack() returns trigger language plpgsql as $$
      begin raise exception 'hijacked as %', current_user; end $$`);
    for (
      const statement of [
        "create trigger hijack after insert on pgmq.q_guarded for each row execute function public.hijack()",
        "alter table pgmq.q_guarded owner to service_role",
        "create trigger hijack after insert on sluice.runs for each row execute function public.hijack()",
        // The queue registries: a forged row would make the definer delete_flow_and_data drop a
        // queue that is not the flow's (another application's Supabase Queue).
        "insert into sluice.queues (queue_name, ownership, owner_flow_slug) values ('foreign', 'private', 'guarded')",
        "update sluice.queues set owner_flow_slug = 'guarded'",
        "delete from sluice.queues",
        "insert into pgmq.meta (queue_name, is_partitioned, is_unlogged) values ('foreign', false, false)",
        "delete from pgmq.meta",
      ]
    ) {
      await assert.rejects(service.unsafe(statement), denied, statement);
    }
    const [{ run }] = await service`select sluice.start_run('guarded', '{"n": 1}'::jsonb) as run`;
    assert.ok(run);
  } finally {
    await service.end();
  }
});

/** A grantee's error that says a shadow object ran: it must never appear. */
const HIJACKED = /hijacked as/;

// Issue 26 finding 1, variant: a grantee that may create in public (Supabase gives service_role
// that) shadows the functions and operators the definer bodies call unqualified, and puts public
// before pg_catalog in its own search_path. The definers run with `search_path = pg_catalog,
// pg_temp`, so none of the shadows runs as the definer. pg_temp listed explicitly is searched for
// relations and types only, never for functions or operators, whatever its place in the path.
Deno.test("shadow functions and operators a grantee creates in public or pg_temp never run inside a definer function", async () => {
  await createSupabaseRoles();
  await using db = await freshDatabase();
  await db.sql`select sluice.grant_access('service_role')`;
  await db.sql`grant create on schema public to service_role`;
  // Compiled by the owner, so the grantee's deletion and start have something to work on.
  const worker = await startWorker(flow, { sql: db.sql, logger: () => {}, env: {} });
  await worker.stop();
  const service = connectAs(db.url, "service_role", 1);
  try {
    const shadows = [
      ["lower(text)", "text"],
      ["octet_length(text)", "integer"],
      ["jsonb_typeof(jsonb)", "text"],
      ["jsonb_array_length(jsonb)", "integer"],
      ["hashtextextended(text, bigint)", "bigint"],
      ["quote_literal(text)", "text"],
      ["gen_random_uuid()", "uuid"],
      ["now()", "timestamptz"],
    ];
    for (const [signature, returns] of shadows) {
      await service.unsafe(`
        create function public.${signature} returns ${returns} language plpgsql as $$
        begin raise exception 'hijacked as %', current_user; end $$`);
    }
    await service.unsafe(`
      create function public.hijack_eq(text, text) returns boolean language plpgsql as $$
      begin raise exception 'hijacked as %', current_user; end $$;
      create operator public.= (leftarg = text, rightarg = text, function = public.hijack_eq);
      create function public.hijack_eq(jsonb, jsonb) returns boolean language plpgsql as $$
      begin raise exception 'hijacked as %', current_user; end $$;
      create operator public.= (leftarg = jsonb, rightarg = jsonb, function = public.hijack_eq);
      create function pg_temp.jsonb_build_object(text, text) returns jsonb language plpgsql as $$
      begin raise exception 'hijacked as %', current_user; end $$;
      create temporary table flows (flow_slug text);
      create temporary table queues (queue_name text);`);
    await service.unsafe("set search_path = public, pg_catalog, pg_temp");
    // The shadows are live in the grantee's own session...
    await assert.rejects(service.unsafe("select lower('A')"), HIJACKED);
    await assert.rejects(service.unsafe("select 'a'::text = 'a'::text"), HIJACKED);
    // ...except the pg_temp function: never found unless named, even with pg_temp first.
    await service.unsafe("set search_path = pg_temp, pg_catalog");
    const [{ built }] = await service.unsafe(`select jsonb_build_object('a', 'b') as built`);
    assert.deepEqual(built, { a: "b" });
    await assert.rejects(service.unsafe(`select pg_temp.jsonb_build_object('a', 'b')`), HIJACKED);
    await service.unsafe("set search_path = public, pg_catalog, pg_temp");

    const [{ run }] = await service.unsafe(
      `select sluice.start_run('guarded', '{"n": 1}'::jsonb) as run`,
    );
    const [{ events }] = await service.unsafe(
      "select sluice.read_run_events($1) as events",
      [run],
    );
    assert.equal(events[0].type, "run:started");
    const shadowed = definition({ slug: "shadowed", steps: [{ slug: "only" }] });
    const [{ result }] = await service.unsafe(
      "select sluice.ensure_flow_compiled($1::text::jsonb, 'development') as result",
      [JSON.stringify(shadowed)],
    );
    assert.equal(result.outcome, "compiled");
    await service.unsafe("select sluice.delete_flow_and_data('shadowed')");
    await service.unsafe("select sluice.delete_flow_and_data('guarded', force => true)");
    const [{ left }] = await db.sql`
      select count(*)::int as left from pgmq.meta where queue_name in ('guarded', 'shadowed')`;
    assert.equal(left, 0);
  } finally {
    await service.end();
  }
});

// Issue 26 finding 1, variant: a grantee calls the definer functions directly with hostile
// arguments. Names are data, never SQL; a queue the owner made for something else (a Supabase
// Queues queue) is neither adopted nor dropped; the grantee cannot do queue DDL itself.
Deno.test("definer functions called by a grantee with hostile names neither run SQL nor adopt or drop a foreign queue, and the grantee cannot create or drop queues through pgmq", async () => {
  await createSupabaseRoles();
  await using db = await freshDatabase();
  await db.sql`select sluice.grant_access('service_role')`;
  // Another application's queue, made by the owner (as Supabase Queues does).
  await db.sql`select pgmq.create('emails')`;
  await db.sql`select pgmq.send('emails', '{"to": "a@example.com"}'::jsonb)`;
  const service = connectAs(db.url, "service_role", 1);
  const compileAs = (def: unknown) =>
    service.unsafe("select sluice.ensure_flow_compiled($1::text::jsonb, 'development')", [
      JSON.stringify(def),
    ]);
  try {
    const injected = "x; drop table sluice.runs; --";
    await assert.rejects(
      compileAs(definition({ slug: injected, steps: [{ slug: "only" }] })),
      (error: Error) =>
        error.message.startsWith("Invalid flow definition") &&
        error.message.includes(injected),
    );
    // A routed flow (refused: shared queues are not built) pointed at the foreign queue, by name
    // and through a quote, and a flow whose generated queue is its name.
    for (const queue of ["emails", `q'); select pgmq.drop_queue('emails`]) {
      const routed = definition({ slug: "adopter", steps: [{ slug: "only" }] });
      routed.queue_mode = "routed";
      routed.routes = [{ step_slug: "only", queue_name: queue }];
      await assert.rejects(compileAs(routed), /Cannot compile flow "adopter": queue_mode "routed"/);
    }
    await assert.rejects(
      compileAs(definition({ slug: "emails", steps: [{ slug: "only" }] })),
      /queue "emails" of step "only" already exists in PGMQ .* sluice never adopts a queue/,
    );
    for (const name of ["emails", `emails'); select pgmq.drop_queue('emails`]) {
      await assert.rejects(
        service.unsafe("select sluice.delete_flow_and_data($1)", [name]),
        /Cannot delete flow ".*": no such flow/,
      );
    }
    // Without create on schema pgmq, queue DDL fails on either implementation: permission denied
    // for schema pgmq, must be owner of extension pgmq (the real one) or of table (compat).
    for (
      const statement of [
        "select pgmq.create('intruder')",
        "select pgmq.create_unlogged('intruder')",
        "select pgmq.drop_queue('emails')",
      ]
    ) {
      await assert.rejects(
        service.unsafe(statement),
        (error: { code?: string }) => error.code === "42501",
        statement,
      );
    }
  } finally {
    await service.end();
  }
  const [{ runs }] = await db.sql`select to_regclass('sluice.runs') is not null as runs`;
  assert.equal(runs, true);
  const [{ messages }] = await db.sql`select count(*)::int as messages from pgmq.q_emails`;
  assert.equal(messages, 1, "the foreign queue is as its owner left it");
  const flows = await db.sql`select flow_slug from sluice.flows`;
  const queues = await db.sql`select queue_name from sluice.queues`;
  assert.deepEqual([flows.length, queues.length], [0, 0]);
});

// The real extension adds every queue table to itself, which only the extension's owner may do:
// compilation (and deletion) by sluice's functions owned by another role fails with an error
// naming both roles.
// Not on the compat layer (installedPgmq() === "compat"): there pgmq is no extension, so it has
// no owner, and queue tables are plain tables in schema pgmq.
Deno.test({
  name:
    "on the pgmq extension, compiling or deleting as a definer that does not own the extension names both roles and says to migrate as the extension's owner (not on the compat layer: no extension owner)",
  ignore: installedPgmq() === "compat",
  async fn() {
    await using db = await freshDatabase();
    const migrator = `sluice_migrator_${crypto.randomUUID().slice(0, 8)}`;
    await db.sql.unsafe(`create role ${migrator} nologin`);
    const [{ owner }] = await db.sql`
      select extowner::regrole::text as owner from pg_extension where extname = 'pgmq'`;
    try {
      await db.sql`select sluice.grant_access(${migrator})`;
      // On the real extension a migrator that may create in pgmq gets as far as ALTER EXTENSION;
      // the packaged compat layer adds no table to the extension, so there the migrator is left
      // without create on pgmq and fails one statement earlier, on the schema.
      const real = pgmqFlavour() === "real";
      if (real) await db.sql.unsafe(`grant create on schema pgmq to ${migrator}`);
      await db.sql.unsafe(
        `alter function sluice.ensure_flow_compiled(jsonb, text) owner to ${migrator}`,
      );
      const def = definition({ slug: "unowned", steps: [{ slug: "only" }] });
      await assert.rejects(
        db.sql.unsafe("select sluice.ensure_flow_compiled($1::text::jsonb, 'production')", [
          JSON.stringify(def),
        ]),
        (error: { message: string; code?: string; detail?: string; hint?: string }) => {
          assert.equal(error.code, "42501");
          assert.equal(
            error.detail,
            real ? "must be owner of extension pgmq" : "permission denied for schema pgmq",
          );
          assert.equal(
            error.message,
            `Cannot compile flow "unowned": queue "unowned" cannot be created: extension pgmq is owned by role "${owner}", but sluice's functions are owned by role "${migrator}", and only the extension's owner may create or drop queues`,
          );
          assert.match(
            error.hint ?? "",
            new RegExp(`Run the sluice migrations as role "${owner}"`),
          );
          return true;
        },
      );
      const [{ written }] = await db.sql`
        select (select count(*) from sluice.flows) + (select count(*) from pgmq.meta) as written`;
      assert.equal(Number(written), 0, "nothing was written");

      // Deletion drops the flow's queues: the same rule, the same error, and nothing deleted.
      await db.sql.unsafe(
        `alter function sluice.ensure_flow_compiled(jsonb, text) owner to current_user;
        alter function sluice.delete_flow_and_data(text, boolean) owner to ${migrator}`,
      );
      await db.sql.unsafe("select sluice.ensure_flow_compiled($1::text::jsonb, 'production')", [
        JSON.stringify(def),
      ]);
      await assert.rejects(
        db.sql`select sluice.delete_flow_and_data('unowned')`,
        (error: { message: string; code?: string }) => {
          assert.equal(error.code, "42501");
          assert.equal(
            error.message,
            `Cannot delete flow "unowned": queue "unowned" cannot be dropped: extension pgmq is owned by role "${owner}", but sluice's functions are owned by role "${migrator}", and only the extension's owner may create or drop queues`,
          );
          return true;
        },
      );
      const [{ kept }] = await db.sql`
        select (select count(*) from sluice.flows) + (select count(*) from pgmq.meta) as kept`;
      assert.equal(Number(kept), 2, "the flow and its queue are still there");
    } finally {
      await db.sql.unsafe(
        `alter function sluice.ensure_flow_compiled(jsonb, text) owner to current_user;
        alter function sluice.delete_flow_and_data(text, boolean) owner to current_user;
        drop owned by ${migrator}; drop role ${migrator}`,
      );
    }
  },
});

/** Supabase's auth.uid(): the JWT's subject, which the Data API sets for each request. */
async function installAuthUid(sql: Sql): Promise<void> {
  await sql.unsafe(`
    create schema auth;
    create function auth.uid() returns uuid language sql stable
      as $$ select nullif(current_setting('request.jwt.claim.sub', true), '')::uuid $$;
    grant usage on schema auth to authenticated;`);
}

/** Runs the first sql block of a guide under docs/ that mentions `needle`, as a user would paste it. */
async function runDocBlock(sql: Sql, guide: string, needle: string): Promise<void> {
  const doc = await Deno.readTextFile(new URL(`../../docs/${guide}`, import.meta.url));
  const block = [...doc.matchAll(/^```sql\n([\s\S]*?)^```$/gm)].map((m) => m[1])
    .find((body) => body.includes(needle));
  assert.ok(block, `docs/${guide} shows ${needle} in an sql block`);
  await sql.unsafe(block);
}

/** Runs `query` in one transaction of `client` as the signed-in user `user` (none when null). */
function asUser<T>(client: Sql, user: string | null, query: (tx: Sql) => Promise<T>): Promise<T> {
  return client.begin(async (tx) => {
    await tx`select set_config('request.jwt.claim.sub', ${user ?? ""}, true)`;
    return await query(tx as unknown as Sql);
  }) as Promise<T>;
}

Deno.test("docs/events.md's start_report and report_events: a user starts the report flow and reads only their own runs' events", async () => {
  await createSupabaseRoles();
  await using db = await freshDatabase();
  await installAuthUid(db.sql);
  await runDocBlock(db.sql, "events.md", "public.start_report");
  const flow = new Flow<{ month: string }>({ slug: "report" })
    .step({ slug: "render" }, (input) => `report for ${input.month}`);
  const other = new Flow<{ n: number }>({ slug: "payroll" })
    .step({ slug: "pay" }, (input) => input.n);
  await using _worker = await testWorker(flow, db);
  await using _other = await testWorker(other, db);

  const browser = connectAs(db.url, "authenticated");
  try {
    const alice = crypto.randomUUID();
    const bob = crypto.randomUUID();
    const start = (user: string | null, flowRef: string) =>
      asUser(browser, user, async (tx) => {
        const [{ run }] = await tx<{ run: string }[]>`
          select public.start_report(${flowRef}, ${tx.json({ month: "2026-11" })}) as run`;
        return run;
      });
    const events = (user: string, runId: string) =>
      asUser(browser, user, async (tx) => {
        const [{ events }] = await tx<{ events: { event: string }[] | null }[]>`
          select public.report_events(${runId}::uuid) as events`;
        return events;
      });

    await assert.rejects(start(null, "report"), {
      code: "42501",
      message: /Cannot start report: not allowed/,
    });
    await assert.rejects(start(alice, "payroll"), {
      code: "42501",
      message: /Cannot start payroll: not allowed/,
    });
    await assert.rejects(
      asUser(browser, alice, (tx) => tx`select sluice.start_run('payroll', '{"n": 1}'::jsonb)`),
      { code: "42501" },
    );
    await assert.rejects(
      asUser(browser, alice, (tx) => tx`select * from public.report_runs`),
      { code: "42501" },
    );

    const runId = await start(alice, "report");
    assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000), flow }), {
      render: "report for 2026-11",
    });
    const own = await events(alice, runId);
    assert.ok(own && own.length > 0, "alice reads her run's events");
    assert.ok(
      own.some((e) => JSON.stringify(e).includes("run:completed")),
      `alice's events end in run:completed: ${JSON.stringify(own)}`,
    );
    assert.equal(await events(bob, runId), null, "bob reads nothing of alice's run");
    const [{ n }] = await db
      .sql`select count(*)::int as n from sluice.runs where flow_slug = 'payroll'`;
    assert.equal(n, 0, "no refused call started a run");
  } finally {
    await browser.end();
  }
});

Deno.test("docs/flow_control.md's start_report with options: a user's repeated start returns their run, another user's same key starts another", async () => {
  await createSupabaseRoles();
  await using db = await freshDatabase();
  await installAuthUid(db.sql);
  await runDocBlock(db.sql, "events.md", "public.start_report");
  await runDocBlock(db.sql, "flow_control.md", "public.start_report");
  const flow = new Flow<{ month: string }>({ slug: "report" })
    .step({ slug: "render" }, (input) => `report for ${input.month}`);
  await compileFlow(db.sql, flow);

  const browser = connectAs(db.url, "authenticated");
  try {
    const alice = crypto.randomUUID();
    const bob = crypto.randomUUID();
    const start = (user: string | null, month: string, key: string | null) =>
      asUser(browser, user, async (tx) => {
        const [{ run }] = await tx<{ run: string }[]>`
          select public.start_report('report', ${tx.json({ month })},
            ${tx.json({ idempotency_key: key })}) as run`;
        return run;
      });

    await assert.rejects(start(null, "2026-11", "tab-1"), { code: "42501" });
    const first = await start(alice, "2026-11", "tab-1");
    assert.equal(await start(alice, "2026-11", "tab-1"), first);
    const bobs = await start(bob, "2026-11", "tab-1");
    assert.notEqual(bobs, first, "bob's tab-1 is not alice's");
    await assert.rejects(start(alice, "2026-12", "tab-1"), {
      code: "SLI01",
      message: new RegExp(`already started run ${first} with another input`),
    });
    // Without a key every start is a new run.
    assert.notEqual(await start(alice, "2026-11", null), await start(alice, "2026-11", null));
    const [counts] = await db.sql`
      select (select count(*)::int from sluice.runs) as runs,
        (select count(*)::int from public.report_runs where user_id = ${alice}) as alices,
        (select count(*)::int from public.report_runs where user_id = ${bob}) as bobs`;
    assert.deepEqual({ ...counts }, { runs: 4, alices: 3, bobs: 1 }, "each run recorded once");
  } finally {
    await browser.end();
  }
});

Deno.test("docs/waits.md's decide_refund: an approver's session completes the wait, anyone else is refused, a second click is a duplicate", async () => {
  await createSupabaseRoles();
  await using db = await freshDatabase();
  await installAuthUid(db.sql);
  await runDocBlock(db.sql, "waits.md", "public.decide_refund");
  const approver = crypto.randomUUID();
  await db.sql`insert into public.refund_approvers (user_id) values (${approver})`;

  const flow = new Flow<{ refundId: string }>({ slug: "browser_refunds" })
    .step({ slug: "request" }, (input) => ({ id: input.refundId }))
    .waitForSignal({
      slug: "decision",
      dependsOn: ["request"],
      key: (deps) => `refund:${deps.request.id}`,
      payload: signalPayload<{ approved: boolean; by: string }>(),
    })
    .step({ slug: "settle", dependsOn: ["decision"] }, (deps) => deps.decision);
  await using _worker = await testWorker(flow, db);
  const runId = await startFlow(db.sql, flow, { refundId: "r_9" });
  await waitUntil(async () => {
    const [row] = await db.sql`select status from sluice.step_states
      where run_id = ${runId} and step_slug = 'decision'`;
    return row?.status === "waiting";
  }, "the decision waiting");

  const browser = connectAs(db.url, "authenticated");
  try {
    const decide = (user: string) =>
      asUser(browser, user, async (tx) => {
        const [{ released }] = await tx<{ released: number }[]>`
          select public.decide_refund('r_9', true) as released`;
        return released;
      });
    await assert.rejects(decide(crypto.randomUUID()), {
      code: "42501",
      message: /Cannot decide refund r_9: not an approver/,
    });
    await assert.rejects(
      browser`select sluice.send_signal('refund:r_9', 'true', 'direct')`,
      { code: "42501" },
    );
    assert.equal(await decide(approver), 1);
    assert.equal(await decide(approver), 0, "a second click is a duplicate");
  } finally {
    await browser.end();
  }
  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000), flow }), {
    settle: { approved: true, by: approver },
  });
});

// The commit of a start releases a limited step's held tasks in a deferred trigger, which runs as
// the session's role, not as the definer start_run: it must not need that role's privileges.
Deno.test("a browser start of a concurrency-limited flow through the definer start_run commits, its tasks held and sent", async () => {
  await createSupabaseRoles();
  await using db = await freshDatabase();
  await installAuthUid(db.sql);
  await runDocBlock(db.sql, "events.md", "public.start_report");
  await runDocBlock(db.sql, "flow_control.md", "public.start_report");
  const flow = new Flow<{ month: string }>({ slug: "report" })
    .step({ slug: "render", concurrency: { limit: 1 } }, (input) => `report for ${input.month}`);
  await compileFlow(db.sql, flow);
  const browser = connectAs(db.url, "authenticated");
  try {
    const alice = crypto.randomUUID();
    for (const key of ["a", "b", "c"]) {
      await asUser(
        browser,
        alice,
        (tx) =>
          tx`select public.start_report('report', ${tx.json({ month: "2026-11" })},
          ${tx.json({ idempotency_key: key })})`,
      );
    }
    const [row] = await db.sql`select slots_in_use, held from sluice.concurrency_slots`;
    assert.deepEqual({ ...row }, { slots_in_use: 1, held: 2 });
    const [{ messages }] = await db.sql`select count(*)::int as messages from pgmq.q_report`;
    assert.equal(messages, 1);
  } finally {
    await browser.end();
  }
});
