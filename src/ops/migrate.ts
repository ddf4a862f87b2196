/**
 * The migration runner behind `deno task db:migrate`: installs the PGMQ layer when needed, then
 * applies every not yet applied file of `supabase/migrations/` in filename order.
 *
 * @module
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { Sql } from "postgres";
import { lockSchemaChanges } from "./_lock.ts";
import { installPgmq, type PgmqInstall } from "./install_pgmq.ts";

/** Options of {@linkcode migrate}. */
export interface MigrateOptions {
  /**
   * Directory holding the `*.sql` migration files (a `file:` URL or a path).
   *
   * @default {new URL("../../supabase/migrations/", import.meta.url)}
   */
  directory?: URL | string;
}

/** What {@linkcode migrate} did. */
export interface MigrateResult {
  /** How PGMQ was made available (see `installPgmq`). */
  pgmq: PgmqInstall;
  /** File names applied by this call, in the order applied; empty when all were applied before. */
  applied: string[];
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

/** Default location of the migrations: `supabase/migrations/` of this package. */
export const MIGRATIONS_DIRECTORY: URL = new URL("../../supabase/migrations/", import.meta.url);

/**
 * Applies the migrations. Each file runs in its own transaction together with the row recording it
 * and its checksum in `sluice_migrations.applied`, so a failing file leaves no trace and a re-run
 * continues with it. Before anything is applied, every recorded file still present is compared
 * with its recorded checksum; a row recorded before the ledger had checksums adopts the file's
 * current checksum. Concurrent callers are serialized by an advisory lock and never apply a file
 * twice.
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
  const directory = directoryUrl(options.directory ?? MIGRATIONS_DIRECTORY);
  const files = await migrationFiles(directory);
  const done = await verifyLedger(sql, files);
  const pgmq = await installPgmq(sql);
  const applied: string[] = [];
  for (const { file, text, checksum } of files) {
    if (done.has(file)) continue;
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
        return true;
      });
      if (appliedNow) applied.push(file);
    } catch (error) {
      if (error instanceof MigrationChangedError) throw error;
      throw new MigrationError(file, describe(error, text), error);
    }
  }
  return { pgmq, applied };
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

function directoryUrl(directory: URL | string): URL {
  const url = directory instanceof URL ? directory : pathToFileURL(resolve(directory));
  if (url.protocol !== "file:") {
    throw new TypeError(`Cannot read migrations from "${url.href}": not a file: URL`);
  }
  // Resolving file names against the directory needs the trailing slash.
  return url.pathname.endsWith("/") ? url : new URL(`${url.href}/`);
}

async function migrationFiles(directory: URL): Promise<MigrationFile[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(directory)) {
    if (entry.isFile && entry.name.endsWith(".sql")) names.push(entry.name);
  }
  // Code-point order, so that the timestamp prefixes order the files independent of the locale.
  names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return await Promise.all(names.map(async (file) => {
    const text = await Deno.readTextFile(new URL(file, directory));
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
