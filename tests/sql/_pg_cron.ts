// A private server with the real pg_cron (Debian's postgresql-15-cron, loaded through
// shared_preload_libraries), migrated and with the extension created. Ignored where the package is
// not installed, except under CI (CI=true), where scripts/setup.sh installs it and its absence
// fails the test.
import assert from "node:assert/strict";
import postgres from "postgres";
import { startTempPostgres, type TempPostgres } from "../../dev/temp_postgres.ts";
import { migrate } from "../../src/migrations/migrate.ts";

const PG_CRON = "/usr/lib/postgresql/15/lib/pg_cron.so";

/** Whether the pg_cron package is installed. */
export const pgCronInstalled = await Deno.stat(PG_CRON).then(() => true, () => false);

/** Ignore pg_cron tests only where the package is missing outside CI. */
export const ignorePgCron = !pgCronInstalled && Deno.env.get("CI") !== "true";

/** The private server and a client of it. */
export interface PgCronServer extends AsyncDisposable {
  /** The server. */
  readonly server: TempPostgres;
  /** A client of its database `postgres`, where sluice and pg_cron are installed. */
  readonly sql: postgres.Sql;
}

/** Starts the private server, migrates it and creates pg_cron. */
export async function startPgCronServer(): Promise<PgCronServer> {
  assert.ok(
    pgCronInstalled,
    `${PG_CRON} is missing: run 'apt-get install postgresql-15-cron' as root (scripts/setup.sh does)`,
  );
  const server = await startTempPostgres({
    path: "/usr/lib/postgresql/15/bin",
    settings: {
      shared_preload_libraries: "pg_cron",
      "cron.database_name": "postgres",
      // Jobs run in background workers: no libpq connection back to the private server.
      "cron.use_background_workers": "on",
    },
  });
  const sql = postgres(server.url, { max: 2, onnotice: () => {} });
  try {
    await migrate(sql);
    await sql`create extension pg_cron`;
  } catch (error) {
    await sql.end();
    await server[Symbol.asyncDispose]();
    throw error;
  }
  return {
    server,
    sql,
    async [Symbol.asyncDispose]() {
      await sql.end();
      await server[Symbol.asyncDispose]();
    },
  };
}

/** The `select cron.schedule(...)` statement of a guide's sql block. */
export async function documentedCronJob(guide: string): Promise<string> {
  const doc = await Deno.readTextFile(new URL(`../../${guide}`, import.meta.url));
  const statement = /```sql\n(select cron\.schedule\(.*\);)\n```/.exec(doc)?.[1];
  assert.ok(statement, `${guide} shows a cron.schedule statement in an sql block`);
  return statement;
}
