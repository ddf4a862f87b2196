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

/** Default location of the migrations: `supabase/migrations/` of this package. */
export const MIGRATIONS_DIRECTORY: URL = new URL("../../supabase/migrations/", import.meta.url);

/**
 * Applies the migrations. Each file runs in its own transaction together with the row recording it
 * in `sluice_migrations.applied`, so a failing file leaves no trace and a re-run continues with it.
 * Concurrent callers are serialized by an advisory lock and never apply a file twice.
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
 * @throws {MigrationError} when a migration file fails.
 */
export async function migrate(sql: Sql, options: MigrateOptions = {}): Promise<MigrateResult> {
  const directory = directoryUrl(options.directory ?? MIGRATIONS_DIRECTORY);
  const files = await migrationFiles(directory);
  const pgmq = await installPgmq(sql);
  // Its own schema, not `sluice`: the bookkeeping must exist before the first migration creates
  // `sluice`, and must survive a migration that drops and recreates it.
  await sql.begin(async (tx) => {
    await lockSchemaChanges(tx);
    await tx.unsafe(`
      create schema if not exists sluice_migrations;
      create table if not exists sluice_migrations.applied (
        file text primary key,
        applied_at timestamptz not null default now()
      );
    `);
  });
  const done = new Set(
    (await sql<{ file: string }[]>`select file from sluice_migrations.applied`).map((r) => r.file),
  );
  const applied: string[] = [];
  for (const file of files) {
    if (done.has(file)) continue;
    const text = await Deno.readTextFile(new URL(file, directory));
    try {
      const appliedNow = await sql.begin(async (tx) => {
        await lockSchemaChanges(tx);
        // Re-check under the lock: a concurrent migrator may have applied it while we waited.
        const [{ recorded }] = await tx`
          select exists (select 1 from sluice_migrations.applied where file = ${file}) as recorded
        `;
        if (recorded) return false;
        // Simple query protocol: a file holds many statements.
        await tx.unsafe(text);
        await tx`insert into sluice_migrations.applied (file) values (${file})`;
        return true;
      });
      if (appliedNow) applied.push(file);
    } catch (error) {
      throw new MigrationError(file, describe(error, text), error);
    }
  }
  return { pgmq, applied };
}

function directoryUrl(directory: URL | string): URL {
  const url = directory instanceof URL ? directory : pathToFileURL(resolve(directory));
  if (url.protocol !== "file:") {
    throw new TypeError(`Cannot read migrations from "${url.href}": not a file: URL`);
  }
  // Resolving file names against the directory needs the trailing slash.
  return url.pathname.endsWith("/") ? url : new URL(`${url.href}/`);
}

async function migrationFiles(directory: URL): Promise<string[]> {
  const files: string[] = [];
  for await (const entry of Deno.readDir(directory)) {
    if (entry.isFile && entry.name.endsWith(".sql")) files.push(entry.name);
  }
  // Code-point order, so that the timestamp prefixes order the files independent of the locale.
  return files.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
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
