/**
 * A migrated database for a benchmark: on the server at `DATABASE_URL` when set, else (or when
 * asked to) on a throwaway cluster of its own. Disposing it drops the database (and stops the cluster).
 *
 * @module
 */
import postgres from "postgres";
import { migrate } from "../src/migrations/migrate.ts";
import { startTempPostgres, type TempPostgres } from "../dev/temp_postgres.ts";
import { buildPgmqExtensionServer, type PgmqExtensionServer } from "../scripts/_pgmq_extension.ts";

/**
 * The directory of the real PGMQ extension's files (`pgmq.control`, `pgmq--<version>.sql`): when
 * set, the throwaway cluster runs on a server copy offering it, as the tests' extension mode does,
 * so a benchmark measures the PGMQ Supabase runs rather than the compat layer.
 */
const EXTENSION_DIR_VARIABLE = "SLUICE_BENCH_PGMQ_EXTENSION_DIR";

/** Options of {@linkcode benchDatabase}. */
export interface BenchDatabaseOptions {
  /**
   * Server settings of the throwaway cluster (ignored with `DATABASE_URL`), e.g. to preload
   * `pg_stat_statements`.
   *
   * @default {{}}
   */
  settings?: Record<string, string | number | boolean>;
  /**
   * Migrations directory, for measuring a patched copy of `supabase/migrations/`.
   *
   * @default {the shipped migrations}
   */
  migrations?: string;
  /**
   * Always start a throwaway cluster, even with `DATABASE_URL` set: for a benchmark that
   * restarts the server.
   *
   * @default {false}
   */
  throwaway?: boolean;
}

/** A migrated benchmark database. */
export interface BenchDatabase extends AsyncDisposable {
  /** Connection URL of the database. */
  url: string;
  /** Where it lives, for the report: `throwaway PostgreSQL 15.x` or `DATABASE_URL (...)`. */
  server: string;
  /** How PGMQ was made available (`compat` on servers without the extension). */
  pgmq: string;
  /** The server is the throwaway cluster, so its processes run on this machine. */
  local: boolean;
  /** The throwaway cluster, or `undefined` on the server at `DATABASE_URL`. */
  cluster: TempPostgres | undefined;
}

/**
 * Creates and migrates a fresh database.
 *
 * @example
 * ```ts ignore
 * import { benchDatabase } from "./_bench_database.ts";
 * await using db = await benchDatabase();
 * console.log(db.url, db.pgmq);
 * ```
 */
export async function benchDatabase(options: BenchDatabaseOptions = {}): Promise<BenchDatabase> {
  const given = options.throwaway ? "" : Deno.env.get("DATABASE_URL") ?? "";
  let cluster: TempPostgres | undefined;
  let copy: PgmqExtensionServer | undefined;
  const extensionDir = Deno.env.get(EXTENSION_DIR_VARIABLE) ?? "";
  if (given === "" && extensionDir !== "") {
    copy = await buildPgmqExtensionServer({ kind: "real", dir: extensionDir });
  }
  let adminUrl: string;
  try {
    adminUrl = given !== "" ? given : (cluster = await startTempPostgres({
      settings: options.settings,
      ...(copy === undefined ? {} : { path: copy.binDir }),
    })).url;
  } catch (error) {
    await copy?.remove();
    throw error;
  }
  // A fixed name on a throwaway cluster; a unique one on a shared server.
  const name = cluster !== undefined
    ? "sluice_bench"
    : `sluice_bench_${crypto.randomUUID().slice(0, 8)}`;
  const admin = postgres(adminUrl, { max: 1, prepare: false, onnotice: () => {} });
  let created = false;
  try {
    await admin.unsafe(`create database ${name}`);
    created = true;
    const url = withDatabase(adminUrl, name);
    const sql = postgres(url, { max: 1, prepare: false, onnotice: () => {} });
    let pgmq: string;
    let version: string;
    let durability: string;
    try {
      ({ pgmq } = await migrate(sql, { directory: options.migrations }));
      [{ version, durability }] = await sql<{ version: string; durability: string }[]>`
        select current_setting('server_version') as version,
          format('fsync %s, synchronous_commit %s', current_setting('fsync'),
            current_setting('synchronous_commit')) as durability`;
    } finally {
      await sql.end();
    }
    const server = cluster !== undefined
      ? `throwaway PostgreSQL ${version} (${durability})`
      : `DATABASE_URL (PostgreSQL ${version})`;
    const dispose = async () => {
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      await admin.end();
      await cluster?.stop();
      await copy?.remove();
    };
    const local = cluster !== undefined;
    return { url, server, pgmq, local, cluster, [Symbol.asyncDispose]: dispose };
  } catch (error) {
    if (created) await admin.unsafe(`drop database if exists ${name} with (force)`).catch(() => {});
    await admin.end();
    await cluster?.stop();
    await copy?.remove();
    throw error;
  }
}

function withDatabase(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.href;
}
