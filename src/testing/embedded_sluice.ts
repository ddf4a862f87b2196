/**
 * An embedded database with sluice installed, started in seconds: migrating a fresh PGlite takes a
 * minute on a busy machine, so the first start keeps a dump of the migrated data directory in a
 * cache directory, named by a digest of the migrations and PGlite's version, and every later new
 * database is loaded from that dump instead of migrating again (`migrate` then only checks its
 * ledger). A data directory that already holds a database is opened and migrated as it is.
 *
 * @module
 */

import { migrate, migrationsDigest } from "../ops/migrate.ts";
import { connect } from "../db/connect.ts";
import {
  type EmbeddedPostgres,
  startEmbeddedPostgres,
  type StartEmbeddedPostgresOptions,
} from "./embedded_postgres.ts";

/** The PGlite version in the snapshot's name: another version may not read its files. */
const PGLITE_VERSION = "0.5.17";

/** Options of {@linkcode startEmbeddedSluice}. */
export interface StartEmbeddedSluiceOptions
  extends Omit<StartEmbeddedPostgresOptions, "loadDataDir"> {
  /**
   * Where the migrated snapshot is kept. `SLUICE_EMBEDDED_CACHE` when set, else
   * `$XDG_CACHE_HOME/sluice/embedded`, else `~/.cache/sluice/embedded`. `false` keeps none (every
   * start migrates).
   */
  cacheDir?: string | false;
  /** Told what the start is doing, as it goes (the first start takes a while). */
  onProgress?: (message: string) => void;
}

/** A running embedded database with sluice installed. */
export interface EmbeddedSluice extends EmbeddedPostgres {
  /** How it started: from the snapshot, migrated from scratch, or an existing data directory. */
  readonly startedFrom: "snapshot" | "migrations" | "data directory";
  /** The snapshot file, or `null` without a cache directory. */
  readonly snapshot: string | null;
}

/**
 * The default cache directory of {@linkcode startEmbeddedSluice}.
 *
 * @param env Where to read `SLUICE_EMBEDDED_CACHE`, `XDG_CACHE_HOME` and `HOME`.
 * @returns The directory, or `null` when none of them is set.
 */
export function defaultEmbeddedCacheDir(env: Pick<Deno.Env, "get"> = Deno.env): string | null {
  const own = env.get("SLUICE_EMBEDDED_CACHE");
  if (own) return own;
  const xdg = env.get("XDG_CACHE_HOME");
  if (xdg) return `${xdg}/sluice/embedded`;
  const home = env.get("HOME");
  return home ? `${home}/.cache/sluice/embedded` : null;
}

/**
 * Starts the embedded database with sluice's migrations applied, from the cached snapshot when
 * there is one, and saves the snapshot when there is not.
 *
 * @example Start one for a script
 * ```ts ignore
 * import { startEmbeddedSluice } from "./embedded_sluice.ts";
 * await using db = await startEmbeddedSluice({ onProgress: console.log });
 * console.log(db.url, db.startedFrom);
 * ```
 */
export async function startEmbeddedSluice(
  options: StartEmbeddedSluiceOptions = {},
): Promise<EmbeddedSluice> {
  const progress = options.onProgress ?? (() => {});
  const cacheDir = options.cacheDir === false
    ? null
    : options.cacheDir ?? defaultEmbeddedCacheDir();
  const snapshot = cacheDir === null
    ? null
    : `${cacheDir}/sluice-${(await migrationsDigest()).slice(0, 16)}-pglite-${PGLITE_VERSION}.tar`;
  const existing = options.dataDir !== undefined &&
    await readable(`${options.dataDir}/PG_VERSION`);
  const dump = existing || snapshot === null ? undefined : await readSnapshot(snapshot);
  progress(
    existing
      ? `opening the embedded database in ${options.dataDir}`
      : dump !== undefined
      ? `loading the migrated embedded database from ${snapshot}`
      : "creating the embedded database and applying sluice's migrations (the first start " +
        `takes up to a minute${snapshot === null ? "" : `; later starts load ${snapshot}`})`,
  );
  const db = await startEmbeddedPostgres({
    dataDir: options.dataDir,
    port: options.port,
    loadDataDir: dump,
  });
  try {
    const sql = connect(db.url, { max: 1, applicationName: "sluice-embedded" });
    try {
      await migrate(sql);
    } finally {
      await sql.end();
    }
    if (!existing && dump === undefined && snapshot !== null) {
      await saveSnapshot(snapshot, await db.dumpDataDir());
      progress(`saved the migrated embedded database to ${snapshot}`);
    }
  } catch (error) {
    await db.stop();
    throw error;
  }
  const startedFrom = existing ? "data directory" : dump !== undefined ? "snapshot" : "migrations";
  return Object.assign(db, { startedFrom, snapshot } as const);
}

async function readable(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

async function readSnapshot(path: string): Promise<Blob | undefined> {
  try {
    return new Blob([await Deno.readFile(path)]);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
}

/**
 * Writes the snapshot under a temporary name and renames it, so that a concurrent start never
 * loads half a file; owner-only, since it holds the database's files.
 */
async function saveSnapshot(path: string, dump: Blob): Promise<void> {
  const dir = path.slice(0, path.lastIndexOf("/"));
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  const temporary = `${path}.${crypto.randomUUID()}.partial`;
  try {
    await Deno.writeFile(temporary, new Uint8Array(await dump.arrayBuffer()), { mode: 0o600 });
    await Deno.rename(temporary, path);
  } catch (error) {
    await Deno.remove(temporary).catch(() => {});
    throw error;
  }
}
