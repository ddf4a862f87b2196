// Issue 43 finding 1: every sluice function (and every function of sluice's PGMQ compat layer)
// runs with `search_path = pg_catalog, pg_temp`, so a function a role creates in public to shadow
// a pg_catalog one never runs inside sluice, whoever calls it.
import assert from "node:assert/strict";
import postgres, { type Sql } from "postgres";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { Flow } from "../../src/dsl/flow.ts";
import { freshDatabase, installedPgmq, loginWithUrlPassword } from "../_db.ts";
import { testWorker } from "../worker/_helpers.ts";
import { scaled } from "../_support.ts";

const PINNED = "search_path=pg_catalog, pg_temp";

interface FunctionRow {
  schema: string;
  signature: string;
  kind: string;
  config: string[] | null;
  source: string;
}

/** The one procedure: it commits batch by batch, and PostgreSQL refuses COMMIT under a SET. */
const PRUNE = "sluice.prune_data_older_than(interval,integer,jsonb)";

Deno.test("every function in schema sluice, and of the compat layer in schema pgmq, pins search_path = pg_catalog, pg_temp; the one procedure calls only sluice functions; the real extension's functions are left as shipped", async () => {
  await using db = await freshDatabase();
  const rows: FunctionRow[] = await db.sql<FunctionRow[]>`
    select n.nspname as schema, p.oid::regprocedure::text as signature, p.prokind::text as kind,
      p.proconfig as config, p.prosrc as source
    from pg_proc p
    join pg_namespace n on n.oid = p.pronamespace
    where n.nspname in ('sluice', 'pgmq')
    order by 1, 2`;
  const procedures = rows.filter((row) => row.kind === "p");
  assert.deepEqual(procedures.map((row) => row.signature), [PRUNE]);
  // Unpinned, so its body calls nothing but pinned sluice functions.
  const calls = [...procedures[0].source.matchAll(/([\w.]+)\s*\(/g)].map((match) => match[1]);
  assert.deepEqual(calls.filter((name) => !name.startsWith("sluice.")), [], PRUNE);
  const sluice = rows.filter((row) => row.schema === "sluice" && row.kind !== "p");
  const pgmq = rows.filter((row) => row.schema === "pgmq");
  assert.ok(sluice.length > 100 && pgmq.length > 20, `${sluice.length} / ${pgmq.length}`);
  const unpinned = (list: FunctionRow[]) =>
    list.filter((row) => !(row.config ?? []).includes(PINNED)).map((row) => row.signature);
  assert.deepEqual(
    unpinned(sluice),
    [],
    "every definition of a sluice function carries `set search_path = pg_catalog, pg_temp` " +
      "(create or replace drops a pin set before)",
  );
  if (installedPgmq() === "compat") {
    assert.deepEqual(unpinned(pgmq), [], "the compat layer's functions pin their search_path");
  } else {
    // The extension (the real PGMQ, or the compat layer packaged as one) is not sluice's to alter.
    assert.deepEqual(pgmq.filter((row) => row.config !== null).map((row) => row.signature), []);
  }
});

/** A login role of this test's own (roles belong to the cluster; the caller drops it). */
async function createRole(sql: Sql, prefix: string, url: string): Promise<string> {
  const role = `${prefix}_${crypto.randomUUID().slice(0, 8)}`;
  await sql.unsafe(`create role ${role} ${loginWithUrlPassword(url)}`);
  return role;
}

function urlAs(url: string, role: string): string {
  const parsed = new URL(url);
  parsed.username = role;
  return parsed.href;
}

/**
 * pg_catalog functions that sluice's bodies call with arguments of concrete types: each shadow is
 * an exact match, so with public on the path it wins over pg_catalog's polymorphic or variadic
 * original. Each records who ran it and answers what the original would, so nothing visibly
 * breaks.
 */
const BODY_SHADOWS = [
  ["cardinality", "bigint[]", "integer"],
  ["cardinality", "uuid[]", "integer"],
  ["cardinality", "text[]", "integer"],
  ["cardinality", "jsonb[]", "integer"],
  ["array_position", "bigint[], bigint", "integer"],
  ["array_length", "bigint[], integer", "integer"],
  // prune_data_older_than's result.
  ["jsonb_build_object", "text, bigint, text, integer", "jsonb"],
] as const;

/** What the worker's read-and-claim statement reaches outside sluice's functions. */
const READ_SHADOWS = [
  // The real pgmq.read's format(query, qtable, conditional, qtable, make_interval(...)).
  ["format", "text, text, jsonb, text, interval", "text"],
] as const;

/** The aggregate of the message ids read, a shadow of array_agg(anynonarray) for bigint. */
const ARRAY_AGG_SHADOW = `
  create function public.shadow_array_agg(bigint[], bigint) returns bigint[]
  language plpgsql as $$
  begin
    insert into public.shadow_calls values (current_user, 'array_agg(bigint)');
    return pg_catalog.array_append($1, $2);
  end $$;
  create aggregate public.array_agg(bigint) (sfunc = public.shadow_array_agg, stype = bigint[]);
  grant execute on function public.shadow_array_agg(bigint[], bigint) to public;
  grant execute on function public.array_agg(bigint) to public;`;

const flow = new Flow<{ words: string[] }>({ slug: "shadowed_paths" })
  .step({ slug: "split" }, (input) => input.words)
  .map({ slug: "upper", array: "split" }, (word) => word.toUpperCase())
  .step({ slug: "join", dependsOn: ["upper"] }, (deps) => deps.upper.join(" "));

/**
 * A role with CREATE on public defines the shadows (and `extra`); a worker and a producer run the
 * flow once as the owner and once as a grantee, both with the default search_path; then `after`
 * runs as the owner. Returns every shadow that ran, with the role it ran as.
 */
async function runShadowed(
  shadows: readonly (readonly [string, string, string])[],
  extra: string,
  after: (sql: Sql) => Promise<void> = async () => {},
): Promise<string[]> {
  await using db = await freshDatabase();
  const attacker = await createRole(db.sql, "sluice_shadower", db.url);
  const grantee = await createRole(db.sql, "sluice_worker_role", db.url);
  const attackerSql = postgres(urlAs(db.url, attacker), { max: 1, onnotice: () => {} });
  const granteeUrl = urlAs(db.url, grantee);
  const granteeSql = postgres(granteeUrl, { max: 2, onnotice: () => {} });
  try {
    await db.sql.unsafe(`grant create, usage on schema public to ${attacker}`);
    await db.sql`select sluice.grant_access(${grantee})`;
    await attackerSql.unsafe(`
      create table public.shadow_calls (called_as text not null, shadow text not null);
      grant insert, select on public.shadow_calls to public;`);
    for (const [name, args, returns] of shadows) {
      const forwarded = args.split(",").map((_, i) => `$${i + 1}`).join(", ");
      await attackerSql.unsafe(`
        create function public.${name}(${args}) returns ${returns} language plpgsql as $$
        begin
          insert into public.shadow_calls values (current_user, '${name}(${args})');
          return pg_catalog.${name}(${forwarded});
        end $$;
        grant execute on function public.${name}(${args}) to public;`);
    }
    await attackerSql.unsafe(extra);
    // The shadows are live for every session with public on its path (the default one).
    const [{ n }] = await granteeSql`select cardinality(array[1, 2]::bigint[]) as n`;
    assert.equal(n, 2);
    const [{ calls }] = await db.sql`select count(*)::int as calls from public.shadow_calls`;
    assert.equal(calls, shadows.some(([name]) => name === "cardinality") ? 1 : 0);
    await db.sql`truncate public.shadow_calls`;

    for (const [url, sql] of [[db.url, db.sql], [granteeUrl, granteeSql]] as const) {
      await using _worker = await testWorker(flow, db, { connectionString: url });
      const runId = await startFlow(sql, flow, { words: ["a", "b", "c"] });
      assert.deepEqual(
        await waitForRun(sql, runId, { timeoutMs: scaled(15_000), flow }),
        { join: "A B C" },
      );
    }
    await after(db.sql);
    const ran = await db.sql`select called_as, shadow from public.shadow_calls`;
    return [...new Set(ran.map((row) => `${row.shadow} as ${row.called_as}`))];
  } finally {
    await attackerSql.end();
    await granteeSql.end();
    for (const role of [attacker, grantee]) {
      await db.sql.unsafe(`drop owned by ${role}`);
      await db.sql.unsafe(`drop role ${role}`);
    }
  }
}

Deno.test("a function a role with CREATE on public shadows never runs inside sluice's functions, for a worker and a producer connected as the owner or as another grantee, nor in a prune", async () => {
  const ran = await runShadowed(BODY_SHADOWS, "", async (sql) => {
    await sql`
      update sluice.runs
      set started_at = now() - interval '2 days', completed_at = now() - interval '1 day'`;
    const [{ result }] = await sql`call sluice.prune_data_older_than(interval '1 hour')`;
    assert.deepEqual(result, { runs: 2, workers: 0, signals: 0 });
  });
  assert.deepEqual(ran, [], `shadows in public ran: ${ran.join("; ")}`);
});

// The worker's own statement reads through sluice.read_messages (PGMQ's read runs with the pin)
// and names pg_catalog.array_agg. A test of its own: without the pin the array_agg shadow also
// makes sluice's own array_agg(integer) calls ambiguous, so the run fails instead of the shadow
// running quietly.
Deno.test("the worker's read-and-claim reaches no shadow in public: neither through PGMQ's read nor through its aggregate of the ids", async () => {
  const ran = await runShadowed(READ_SHADOWS, ARRAY_AGG_SHADOW);
  assert.deepEqual(ran, [], `shadows in public ran: ${ran.join("; ")}`);
});
