/**
 * The migration runner behind `sluice migrate` (`deno task db:migrate`): installs the PGMQ layer
 * when needed, then applies every not yet applied migration of sluice in filename order. Its files
 * load next to this module, from disk or from the package's remote URL alike.
 *
 * @module
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { Sql, TransactionSql } from "../db/driver/postgres.ts";
import { lockSchemaChanges } from "./_lock.ts";
import { installPgmq, type PgmqInstall } from "./install_pgmq.ts";
import { MIGRATION_FILES } from "./migration_files.ts";
import { readText } from "./read_text.ts";

/** Options of {@linkcode migrate}. */
export interface MigrateOptions {
  /**
   * A directory on disk (a `file:` URL or a path) whose `*.sql` files to apply instead of
   * sluice's own migrations (see {@linkcode MIGRATION_FILES}).
   */
  directory?: URL | string;
  /**
   * The copies `sluice install` made in a Supabase project: sluice's file name -> the copy's
   * file name in `supabase/migrations/`. A file applied here is also recorded in Supabase's ledger
   * (`supabase_migrations.schema_migrations`) under its copy's version, so that
   * `supabase migration up` afterwards skips it.
   *
   * @default {new Map()}
   */
  supabaseCopies?: ReadonlyMap<string, string>;
}

/** What {@linkcode migrate} did. */
export interface MigrateResult {
  /** How PGMQ was made available (see `installPgmq`). */
  pgmq: PgmqInstall;
  /** File names applied by this call, in the order applied; empty when all were applied before. */
  applied: string[];
  /**
   * File names not applied because Supabase's migration runner already did
   * (`supabase_migrations.schema_migrations` records them, as the original or as a copy).
   */
  appliedBySupabase: string[];
}

/** Thrown when a migration file fails; the file's transaction was rolled back. */
export class MigrationError extends Error {
  /** Name of the failed migration file. */
  file: string;

  /**
   * @param file Name of the failed migration file.
   * @param detail What went wrong.
   * @param cause The underlying error.
   */
  constructor(file: string, detail: string, cause: unknown) {
    super(`Cannot apply migration "${file}": ${detail}`, { cause });
    this.name = "MigrationError";
    this.file = file;
  }
}

/**
 * Thrown when a migration file recorded as applied no longer has the checksum recorded for it:
 * applied migrations are never edited (docs/architecture.md#migrations). Nothing was applied.
 */
export class MigrationChangedError extends Error {
  /** Name of the changed migration file. */
  file: string;
  /** SHA-256 (hex) recorded when the file was applied. */
  recorded: string;
  /** SHA-256 (hex) of the file as it is now. */
  actual: string;

  /**
   * @param file Name of the changed migration file.
   * @param recorded SHA-256 (hex) recorded when the file was applied.
   * @param actual SHA-256 (hex) of the file as it is now.
   */
  constructor(file: string, recorded: string, actual: string) {
    super(
      `Cannot migrate: applied migration "${file}" has changed since it was applied ` +
        `(sha256 ${recorded.slice(0, 12)}... recorded, ${actual.slice(0, 12)}... now); restore ` +
        "the applied text and put the change in a new migration",
    );
    this.name = "MigrationChangedError";
    this.file = file;
    this.recorded = recorded;
    this.actual = actual;
  }
}

/** Location of sluice's migrations: `supabase/migrations/` of this package, on disk or remote. */
export const MIGRATIONS_DIRECTORY: URL = new URL("../../supabase/migrations/", import.meta.url);

/**
 * Applies the migrations. Each file runs in its own transaction together with the row recording it
 * and its checksum in `sluice_migrations.applied`, so a failing file leaves no trace and a re-run
 * continues with it. Before anything is applied, every recorded file still present is compared
 * with its recorded checksum; a row recorded before the ledger had checksums adopts the file's
 * current checksum. A file Supabase's migration runner recorded as applied (under its own name or
 * as a copy made by `sluice install`) is skipped and reported in `appliedBySupabase`. Concurrent
 * callers are serialized by an advisory lock and never apply a file twice.
 *
 * @example
 * ```ts ignore
 * import postgres from "postgres";
 * import { migrate } from "./migrate.ts";
 * const sql = postgres(Deno.env.get("DATABASE_URL")!, { prepare: false });
 * const { pgmq, applied } = await migrate(sql);
 * console.log(pgmq, applied); // "compat" [ "20261130000000_pgmq_extension.sql", ... ]
 * await sql.end();
 * ```
 *
 * @throws {MigrationChangedError} when an applied file has changed; nothing is applied.
 * @throws {MigrationError} when a migration file fails.
 */
export async function migrate(sql: Sql, options: MigrateOptions = {}): Promise<MigrateResult> {
  const files = options.directory === undefined
    ? await readMigrations(MIGRATIONS_DIRECTORY, MIGRATION_FILES)
    : await readMigrations(...await listDirectory(options.directory));
  const done = await verifyLedger(sql, files);
  const bySupabase = await appliedBySupabase(sql, files);
  const pgmq = await installPgmq(sql);
  const applied: string[] = [];
  const copies = options.supabaseCopies ?? new Map<string, string>();
  for (const { file, text, checksum } of files) {
    if (done.has(file) || bySupabase.includes(file)) continue;
    try {
      const appliedNow = await sql.begin(async (tx) => {
        await lockSchemaChanges(tx);
        // Re-check under the lock: a concurrent migrator may have applied it while we waited.
        const [row] = await tx<{ checksum: string | null }[]>`
          select checksum from sluice_migrations.applied where file = ${file}
        `;
        if (row !== undefined) {
          if (row.checksum !== null && row.checksum !== checksum) {
            throw new MigrationChangedError(file, row.checksum, checksum);
          }
          return false;
        }
        // Simple query protocol: a file holds many statements.
        await tx.unsafe(text);
        await tx`
          insert into sluice_migrations.applied (file, checksum) values (${file}, ${checksum})
        `;
        const copy = copies.get(file);
        if (copy !== undefined) await recordInSupabaseLedger(tx, copy, text);
        return true;
      });
      if (appliedNow) applied.push(file);
    } catch (error) {
      if (error instanceof MigrationChangedError) throw error;
      throw new MigrationError(file, describe(error, text), error);
    }
  }
  return { pgmq, applied, appliedBySupabase: bySupabase };
}

interface MigrationFile {
  file: string;
  text: string;
  /** SHA-256 (hex) of the text with line endings normalized to `\n`. */
  checksum: string;
}

/**
 * Creates or upgrades the ledger, fails on a changed applied file, and returns the applied files.
 * Its own schema, not `sluice`: the ledger must exist before the first migration creates `sluice`,
 * and must survive a migration that drops and recreates it.
 */
async function verifyLedger(sql: Sql, files: MigrationFile[]): Promise<Set<string>> {
  return await sql.begin(async (tx) => {
    await lockSchemaChanges(tx);
    await tx.unsafe(`
      create schema if not exists sluice_migrations;
      create table if not exists sluice_migrations.applied (
        file text primary key,
        applied_at timestamptz not null default now()
      );
      alter table sluice_migrations.applied add column if not exists checksum text;
    `);
    const rows = await tx<{ file: string; checksum: string | null }[]>`
      select file, checksum from sluice_migrations.applied
    `;
    const recorded = new Map(rows.map((row) => [row.file, row.checksum]));
    for (const { file, checksum } of files) {
      const before = recorded.get(file);
      if (typeof before === "string" && before !== checksum) {
        throw new MigrationChangedError(file, before, checksum);
      }
    }
    // Rows from before checksums were recorded: nobody knows what was applied, so the file as it
    // is now becomes the reference for every later run.
    const adopted = files.filter(({ file }) => recorded.get(file) === null);
    if (adopted.length > 0) {
      const names = adopted.map((f) => f.file);
      const checksums = adopted.map((f) => f.checksum);
      await tx`
        update sluice_migrations.applied a set checksum = f.checksum
        from unnest(${names}::text[], ${checksums}::text[]) as f(file, checksum)
        where a.file = f.file and a.checksum is null
      `;
    }
    return new Set(recorded.keys());
  });
}

/**
 * The files Supabase's migration runner recorded: a row's `version_name` is the original file
 * (`supabase migration up` on sluice's own files), its `name` alone a copy `sluice install` made
 * (`<new version>_<sluice's file name>`).
 */
async function appliedBySupabase(sql: Sql, files: MigrationFile[]): Promise<string[]> {
  const [{ exists }] = await sql<{ exists: boolean }[]>`
    select to_regclass('supabase_migrations.schema_migrations') is not null as exists
  `;
  if (!exists) return [];
  const rows = await sql<{ version: string; name: string | null }[]>`
    select version, name from supabase_migrations.schema_migrations
  `;
  const stems = new Set(rows.flatMap((row) => [`${row.version}_${row.name}`, row.name ?? ""]));
  return files.map(({ file }) => file).filter((file) => stems.has(file.replace(/\.sql$/, "")));
}

/**
 * Records an applied copy in Supabase's ledger, created as `supabase migration up` creates it
 * when absent, so that Supabase's runner skips the copy.
 */
async function recordInSupabaseLedger(tx: TransactionSql, copy: string, text: string) {
  const [, version, name] = /^(\d+)_(.*)\.sql$/.exec(copy) ?? [];
  await tx.unsafe(`
    create schema if not exists supabase_migrations;
    create table if not exists supabase_migrations.schema_migrations (version text primary key);
    alter table supabase_migrations.schema_migrations add column if not exists statements text[];
    alter table supabase_migrations.schema_migrations add column if not exists name text;
  `);
  await tx`
    insert into supabase_migrations.schema_migrations (version, statements, name)
    values (${version}, ${[text]}, ${name})
    on conflict (version) do nothing
  `;
}

/** The `*.sql` files of a directory on disk, in code-point order. */
async function listDirectory(directory: URL | string): Promise<[URL, string[]]> {
  let url = directory instanceof URL ? directory : pathToFileURL(resolve(directory));
  if (url.protocol !== "file:") {
    throw new TypeError(
      `Cannot read migrations from "${url.href}": only a directory on disk can be listed`,
    );
  }
  // Resolving file names against the directory needs the trailing slash.
  if (!url.pathname.endsWith("/")) url = new URL(`${url.href}/`);
  const names: string[] = [];
  for await (const entry of Deno.readDir(url)) {
    if (entry.isFile && entry.name.endsWith(".sql")) names.push(entry.name);
  }
  // Code-point order, so that the timestamp prefixes order the files independent of the locale.
  names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return [url, names];
}

async function readMigrations(
  directory: URL,
  names: readonly string[],
): Promise<MigrationFile[]> {
  return await Promise.all(names.map(async (file) => {
    const text = await readText(new URL(file, directory));
    // A checkout with CRLF line endings holds the same migration.
    const bytes = new TextEncoder().encode(text.replaceAll("\r\n", "\n"));
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
    const checksum = Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
    return { file, text, checksum };
  }));
}

/** The Postgres error text, plus the line in the file when Postgres reports a position. */
function describe(error: unknown, text: string): string {
  if (!(error instanceof Error)) return String(error);
  const fields = error as Error & { position?: string; code?: string };
  const position = Number(fields.position);
  const line = position > 0 ? ` at line ${text.slice(0, position - 1).split("\n").length}` : "";
  const code = fields.code !== undefined ? ` (SQLSTATE ${fields.code})` : "";
  return `${error.message}${line}${code}`;
}
