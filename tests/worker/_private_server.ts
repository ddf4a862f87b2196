// A private PostgreSQL server for tests that restart it (a restart would cut every other test's
// connections on the suite server). It uses the suite server's own binaries, so in the extension
// mode it offers the same PGMQ.
import assert from "node:assert/strict";
import postgres from "postgres";
import { startTempPostgres, type TempPostgres } from "../../dev/temp_postgres.ts";
import { migrate } from "../../src/migrations/migrate.ts";
import { adminUrl, installedPgmq, type TestDatabase } from "../_db.ts";

/** A private server, migrated, and how to restart it. */
export interface PrivateServer extends AsyncDisposable {
  /** The server. */
  readonly server: TempPostgres;
  /** A client of its database, where sluice is installed. */
  readonly sql: postgres.Sql;
  /** The database, as the worker test helpers take it. */
  readonly db: TestDatabase;
  /** Restarts it with `pg_ctl restart`: `fast` shuts down cleanly, `immediate` as after a crash. */
  restart(mode: "fast" | "immediate"): Promise<void>;
  /** Stops it (`pg_ctl stop`), for an outage that lasts until {@linkcode start}. */
  stop(mode: "fast" | "immediate"): Promise<void>;
  /** Starts it again after {@linkcode stop}; resolves once it accepts connections. */
  start(): Promise<void>;
}

/** The suite server's binary directory. */
async function suiteBinDir(): Promise<string> {
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  try {
    const [{ setting }] = await admin<{ setting: string }[]>`
      select setting from pg_config where name = 'BINDIR'`;
    return setting;
  } finally {
    await admin.end();
  }
}

/**
 * Starts a private server with the suite server's binaries and installs sluice (with the suite's
 * PGMQ: the extension where the binaries offer it). Its commits are synchronous (the test
 * defaults turn that off for speed), so an `immediate` restart loses no committed transaction, as
 * on a production server; fsync stays off, since the operating system does not crash here.
 */
export async function startPrivateServer(): Promise<PrivateServer> {
  const binDir = await suiteBinDir();
  const server = await startTempPostgres({ path: binDir, settings: { synchronous_commit: true } });
  const sql = postgres(server.url, { max: 2, onnotice: () => {} });
  try {
    const { pgmq } = await migrate(sql);
    assert.equal(pgmq, installedPgmq(), "the private server offers the suite's PGMQ");
  } catch (error) {
    await sql.end();
    await server[Symbol.asyncDispose]();
    throw error;
  }
  return {
    server,
    sql,
    db: { url: server.url } as TestDatabase,
    restart: (mode) => server.control("restart", mode),
    stop: (mode) => server.control("stop", mode),
    start: () => server.control("start"),
    async [Symbol.asyncDispose]() {
      await sql.end();
      await server[Symbol.asyncDispose]();
    },
  };
}
