/**
 * `sluice migrate`: applies sluice's migrations to the database at `DATABASE_URL`. Run in a
 * Supabase project where `sluice install` copied them, it records what it applies in Supabase's
 * ledger too, so that `supabase migration up` skips those copies; files Supabase's runner applied
 * are skipped here and reported.
 *
 * @module
 */
import { join } from "node:path";
import { connect } from "../db/connect.ts";
import type { PgmqInstall } from "../migrations/install_pgmq.ts";
import { migrate, MigrationChangedError, MigrationError } from "../migrations/migrate.ts";
import { findSupabaseCopies } from "./_supabase_copies.ts";
import type { CliIo } from "./commands/command_types.ts";

const PGMQ_OUTCOME: Record<PgmqInstall, string> = {
  present: "pgmq: already installed, left as is",
  extension: "pgmq: created extension pgmq",
  compat: "pgmq: extension not available on this server; installed sluice's PGMQ-compatible layer",
};

/**
 * Runs the migrations against `url` and prints what was done.
 *
 * @param url The database URL (`DATABASE_URL`).
 * @param projectDir The directory whose `supabase/migrations/` may hold installed copies.
 * @param io Where to print.
 * @returns The process exit code: 0 done, 1 failed, 2 no database URL.
 *
 * @example Usage
 * ```ts ignore
 * import { migrateCommand } from "./migrate.ts";
 *
 * Deno.exit(await migrateCommand(Deno.env.get("DATABASE_URL"), Deno.cwd()));
 * ```
 */
export async function migrateCommand(
  url: string | undefined,
  projectDir: string,
  io: CliIo = { out: console.log, err: console.error },
): Promise<number> {
  if (url === undefined || url === "") {
    io.err(
      "Cannot migrate: DATABASE_URL is not set; set it to the database to migrate, e.g. " +
        "DATABASE_URL=postgres://postgres:postgres@127.0.0.1:54322/postgres",
    );
    return 2;
  }
  let sql: ReturnType<typeof connect> | undefined;
  try {
    sql = connect(url, { max: 2, applicationName: "sluice-migrate" });
    const supabaseCopies = await findSupabaseCopies(join(projectDir, "supabase"));
    const { pgmq, applied, appliedBySupabase } = await migrate(sql, { supabaseCopies });
    io.out(PGMQ_OUTCOME[pgmq]);
    if (appliedBySupabase.length > 0) {
      io.out(
        `migrations: ${appliedBySupabase.length} already applied by Supabase's migration runner ` +
          "(supabase_migrations.schema_migrations records them); skipped",
      );
    }
    for (const file of applied) {
      const copy = supabaseCopies.get(file);
      io.out(
        `applied ${file}${copy === undefined ? "" : ` (recorded for supabase as ${copy})`}`,
      );
    }
    io.out(
      applied.length === 0 ? "migrations: up to date" : `migrations: applied ${applied.length}`,
    );
    return 0;
  } catch (error) {
    // A failed migration or an unreachable server deserves one clear line, not a stack trace.
    const message = error instanceof Error ? error.message : String(error);
    const known = error instanceof MigrationError || error instanceof MigrationChangedError;
    io.err(known ? message : `Cannot migrate: ${message}`);
    return 1;
  } finally {
    // Bounded: every statement has settled here, and postgres.js 3.4.9's end() has been seen to
    // wait forever on a connection the server showed idle; after 5 s it destroys the connection.
    await sql?.end({ timeout: 5 });
  }
}
