/**
 * A database with sluice installed for tests: the embedded one, or the one at `DATABASE_URL`.
 *
 * @module
 */

import type { Sql } from "../db/driver/postgres.ts";
import { connect } from "../db/connect.ts";
import { migrate } from "../migrations/migrate.ts";
import { startEmbeddedSluice } from "../embedded/embedded_sluice.ts";
import { TestClock } from "./test_clock.ts";

/** A database with sluice installed, for tests. Dispose it (or call `stop()`) at the end. */
export interface TestDatabase extends AsyncDisposable {
  /** Connection URL. */
  readonly url: string;
  /** A postgres.js client on it. */
  readonly sql: Sql;
  /** Whether this is the embedded database (PGlite in this process). */
  readonly embedded: boolean;
  /** Moves sluice's time forward in this database. */
  readonly clock: TestClock;
  /** Closes the client and, for the embedded database, the database. */
  stop(): Promise<void>;
}

/**
 * Starts an embedded database (or connects to `DATABASE_URL` when set) and installs sluice. The
 * embedded one is loaded from a cached snapshot of a migrated database (see `docs/testing.md`):
 * only the first start on a machine, or after the migrations changed, migrates from scratch.
 * Share one per test file (one `Deno.test` with `t.step`s), as each start copies the snapshot.
 *
 * @returns The database, migrated.
 */
export async function startTestDatabase(): Promise<TestDatabase> {
  const given = Deno.env.get("DATABASE_URL") ?? "";
  const embedded = given === "" ? await startEmbeddedSluice() : null;
  const url = embedded?.url ?? given;
  const sql = connect(url, { max: 2, applicationName: "sluice-testing" });
  const stop = async () => {
    await sql.end();
    await embedded?.stop();
  };
  try {
    // The embedded database is migrated already.
    if (embedded === null) await migrate(sql);
  } catch (error) {
    await stop();
    throw error;
  }
  const clock = new TestClock(sql);
  return { url, sql, embedded: embedded !== null, clock, stop, [Symbol.asyncDispose]: stop };
}
