/**
 * `deno task db:migrate`: applies sluice's migrations to the database at `DATABASE_URL`.
 *
 * @module
 */
import { connect } from "../db/connect.ts";
import { migrate, MigrationChangedError, MigrationError } from "./migrate.ts";
import type { PgmqInstall } from "./install_pgmq.ts";

const PGMQ_OUTCOME: Record<PgmqInstall, string> = {
  present: "pgmq: already installed, left as is",
  extension: "pgmq: created extension pgmq",
  compat: "pgmq: extension not available on this server; installed sluice's PGMQ-compatible layer",
};

/**
 * Runs the migrations against `url` and prints what was done.
 *
 * @example
 * ```ts ignore
 * import { main } from "./migrate_cli.ts";
 * Deno.exit(await main(Deno.env.get("DATABASE_URL")));
 * ```
 *
 * @returns The process exit code.
 */
export async function main(url: string | undefined): Promise<number> {
  if (url === undefined || url === "") {
    console.error(
      "Cannot migrate: DATABASE_URL is not set; set it to the database to migrate, e.g. " +
        "DATABASE_URL=postgres://postgres:postgres@127.0.0.1:54322/postgres",
    );
    return 2;
  }
  const sql = connect(url, { max: 2, applicationName: "sluice-migrate" });
  try {
    const { pgmq, applied } = await migrate(sql);
    console.log(PGMQ_OUTCOME[pgmq]);
    for (const file of applied) console.log(`applied ${file}`);
    console.log(
      applied.length === 0 ? "migrations: up to date" : `migrations: applied ${applied.length}`,
    );
    return 0;
  } catch (error) {
    // A failed migration or an unreachable server deserves one clear line, not a stack trace.
    const message = error instanceof Error ? error.message : String(error);
    const known = error instanceof MigrationError || error instanceof MigrationChangedError;
    console.error(known ? message : `Cannot migrate: ${message}`);
    return 1;
  } finally {
    await sql.end();
  }
}

if (import.meta.main) Deno.exit(await main(Deno.env.get("DATABASE_URL")));
