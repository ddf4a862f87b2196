/**
 * `deno task sql:migration <name>`: turns the routines edited under `supabase/schemas/functions/`
 * into the next migration (docs/sql.md#where-each-routine-lives).
 *
 * Applies the migrations to an empty throwaway cluster, then applies each routine source file in a
 * transaction it rolls back, comparing every definition of schema `sluice` (`pg_get_functiondef`)
 * before and after: a file that changes one, or defines a new one, has changed. Their sources go,
 * whole and in file-name order, into `supabase/migrations/<UTC timestamp>_sluice_<name>.sql`
 * (listed in `src/migrations/migration_files.ts`), which is then applied on the same cluster to prove it
 * runs; finally `deno task schema:dump` brings the sources and the routine index
 * up to date. Nothing is written when no routine changed or a source fails to apply.
 *
 * @module
 */

import postgres from "postgres";
import { startTempPostgres } from "../dev/temp_postgres.ts";
import { migrate } from "../src/migrations/migrate.ts";
import { SOURCES_DIRECTORY } from "./_sql_sources.ts";

const ROOT = new URL("../", import.meta.url);
const MIGRATIONS = new URL("supabase/migrations/", ROOT);
const MIGRATION_LIST = new URL("src/migrations/migration_files.ts", ROOT);

/** The migration's name is not a lowercase slug. */
export class MigrationNameError extends Error {
  override readonly name = "MigrationNameError";
  /** The offending name. */
  readonly value: string;
  constructor(value: string) {
    super(
      `sql:migration: the migration's name must be lowercase letters, digits and _, starting with ` +
        `a letter (e.g. fail_task_fencing), got ${JSON.stringify(value)}`,
    );
    this.value = value;
  }
}

/** A routine source that fails to apply: nothing was written. */
export class SourceApplyError extends Error {
  override readonly name = "SourceApplyError";
  /** The source file. */
  readonly file: string;
  constructor(file: string, cause: unknown) {
    super(
      `sql:migration: ${file} does not apply to the migrated schema: ${
        cause instanceof Error ? cause.message : String(cause)
      }`,
      { cause },
    );
    this.file = file;
  }
}

/** Checks the migration's name. */
export function migrationName(value: string | undefined): string {
  if (value === undefined || !/^[a-z][a-z0-9_]{0,62}$/.test(value)) {
    throw new MigrationNameError(value ?? "");
  }
  return value;
}

/** The file name of the next migration: now in UTC, later than every existing one. */
export function nextMigrationFile(existing: readonly string[], name: string, now: Date): string {
  const stamp = now.toISOString().replace(/[-:T]/g, "").slice(0, 14);
  const last = existing.map((file) => file.slice(0, 14)).sort().at(-1) ?? "0";
  const next = stamp > last ? stamp : String(BigInt(last) + 1n);
  return `${next}_sluice_${name}.sql`;
}

/** A source file's text without its two generated header lines. */
export function sourceBody(text: string): string {
  const lines = text.split("\n");
  const generated = lines.length >= 2 && lines[0].startsWith("-- sluice.") &&
    lines[1].startsWith("-- Edit it here");
  return (generated ? lines.slice(2) : lines).join("\n").trim();
}

type Definitions = Map<string, string>;

async function definitions(sql: postgres.TransactionSql): Promise<Definitions> {
  const rows = await sql<{ id: string; def: string }[]>`
    select p.oid::regprocedure::text as id, pg_get_functiondef(p.oid) as def
    from pg_proc p
    where p.pronamespace = 'sluice'::regnamespace and p.prokind in ('f', 'p')`;
  return new Map(rows.map((row) => [row.id, row.def]));
}

/** The routines a source changes or adds when applied over the migrated schema. */
async function changedBy(sql: postgres.Sql, file: string, text: string): Promise<string[]> {
  const rollback = new Error("rollback");
  let changed: string[] = [];
  try {
    await sql.begin(async (tx) => {
      const before = await definitions(tx);
      try {
        await tx.unsafe(text);
      } catch (error) {
        throw new SourceApplyError(file, error);
      }
      const after = await definitions(tx);
      changed = [...after].filter(([id, def]) => before.get(id) !== def).map(([id]) => id);
      throw rollback;
    });
  } catch (error) {
    if (error !== rollback) throw error;
  }
  return changed;
}

async function listSources(): Promise<string[]> {
  const dir = new URL(`${SOURCES_DIRECTORY}functions/`, ROOT);
  const files: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isFile && entry.name.endsWith(".sql")) files.push(entry.name);
  }
  return files.sort();
}

async function main(args: string[]): Promise<number> {
  let name: string;
  try {
    name = migrationName(args[0]);
  } catch (error) {
    console.error((error as Error).message);
    return 2;
  }
  await using cluster = await startTempPostgres();
  const sql = postgres(cluster.url, { prepare: false, max: 1, onnotice: () => {} });
  try {
    await migrate(sql);
    const changed: { file: string; routines: string[]; body: string }[] = [];
    for (const file of await listSources()) {
      const text = await Deno.readTextFile(
        new URL(`${SOURCES_DIRECTORY}functions/${file}`, ROOT),
      );
      const routines = await changedBy(sql, file, text);
      if (routines.length > 0) changed.push({ file, routines, body: sourceBody(text) });
    }
    if (changed.length === 0) {
      console.log(
        "sql:migration: no routine under supabase/schemas/functions/ changed: nothing written",
      );
      return 0;
    }
    const existing: string[] = [];
    for await (const entry of Deno.readDir(MIGRATIONS)) {
      if (entry.isFile && entry.name.endsWith(".sql")) existing.push(entry.name);
    }
    const migration = nextMigrationFile(existing, name, new Date());
    const routines = changed.flatMap((c) => c.routines).sort();
    const text = [
      `-- ${name}: ${routines.map((r) => `sluice.${r.replace(/^sluice\./, "")}`).join(", ")}.`,
      `-- Written by \`deno task sql:migration ${name}\` from supabase/schemas/functions/ ` +
      `(${changed.map((c) => c.file).join(", ")}); each routine whole, as its source reads.`,
      "",
      changed.map((c) => c.body).join("\n\n"),
      "",
    ].join("\n");
    // The migration must run where the sources did: applied on the same cluster before it is kept.
    await sql.begin((tx) => tx.unsafe(text));
    await Deno.writeTextFile(new URL(migration, MIGRATIONS), text);
    const list = await Deno.readTextFile(MIGRATION_LIST);
    await Deno.writeTextFile(MIGRATION_LIST, list.replace(/\n\];\n$/, `\n  "${migration}",\n];\n`));
    console.log(`sql:migration: wrote supabase/migrations/${migration} (${routines.join(", ")})`);
  } catch (error) {
    if (!(error instanceof SourceApplyError)) throw error;
    console.error(error.message);
    return 1;
  } finally {
    await sql.end();
  }
  const dump = await new Deno.Command(Deno.execPath(), {
    // The written migration now holds every changed source: the sources may be rewritten.
    args: ["run", "-A", new URL("schema_dump.ts", import.meta.url).pathname, "--force"],
    stdin: "null",
  }).output();
  return dump.code;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
