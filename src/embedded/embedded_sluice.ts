/**
 * An embedded database with sluice installed, started in seconds: migrating a fresh PGlite takes a
 * minute on a busy machine, so the first start keeps a dump of the migrated data directory in a
 * cache directory, named by a digest of the migrations and PGlite's version, and every later new
 * database is loaded from that dump instead of migrating again (`migrate` then only checks its
 * ledger). A data directory that already holds a database is opened and migrated as it is.
 *
 * The snapshot file is checked before PGlite opens it (`snapshot.ts`). A snapshot that is damaged,
 * does not load, or whose ledger lacks a migration, is set aside and the start migrates from
 * scratch (saving a new one).
 *
 * @module
 */

import { migrate, migrationsDigest } from "../migrations/migrate.ts";
import { connect } from "../db/connect.ts";
import {
  type EmbeddedPostgres,
  PGLITE_VERSION,
  startEmbeddedPostgres,
  type StartEmbeddedPostgresOptions,
} from "./embedded_postgres.ts";
import { readSnapshot, writeSnapshot } from "./snapshot.ts";

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
 * there is a usable one, and saves the snapshot when there is not.
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
  const dataDir = options.dataDir;
  if (dataDir !== undefined && !await emptyOrMissing(dataDir)) {
    progress(`opening the embedded database in ${dataDir}`);
    return await startMigrated(options, undefined, "data directory", snapshot);
  }
  const read = snapshot === null ? { state: "missing" as const } : await readSnapshot(snapshot);
  if (read.state === "damaged") {
    progress(
      `the snapshot ${snapshot} is damaged (${read.reason}); migrating from scratch instead`,
    );
  } else if (read.state === "ok") {
    progress(`loading the migrated embedded database from ${snapshot}`);
    try {
      return await startMigrated(options, read.dump, "snapshot", snapshot);
    } catch (error) {
      progress(
        `the snapshot ${snapshot} cannot be used (${
          error instanceof Error ? error.message : error
        }); migrating from scratch instead`,
      );
      // It was empty before the snapshot was unpacked into it.
      if (dataDir !== undefined) await Deno.remove(dataDir, { recursive: true });
    }
  }
  progress(
    "creating the embedded database and applying sluice's migrations (the first start takes up " +
      `to a minute${snapshot === null ? "" : `; later starts load ${snapshot}`})`,
  );
  const db = await startMigrated(options, undefined, "migrations", snapshot);
  if (snapshot !== null) {
    try {
      await writeSnapshot(snapshot, await db.dumpDataDir());
    } catch (error) {
      await db.stop();
      throw error;
    }
    progress(`saved the migrated embedded database to ${snapshot}`);
  }
  return db;
}

/** Thrown when a database loaded from a snapshot lacks migrations the package has. */
class StaleSnapshotError extends Error {
  constructor(applied: string[]) {
    super(`its ledger lacks ${applied.length} migration(s), from ${applied[0]}`);
    this.name = "StaleSnapshotError";
  }
}

/** Starts the database and migrates it; one from a snapshot must need no migration. */
async function startMigrated(
  options: StartEmbeddedSluiceOptions,
  dump: Blob | undefined,
  startedFrom: EmbeddedSluice["startedFrom"],
  snapshot: string | null,
): Promise<EmbeddedSluice> {
  const db = await startEmbeddedPostgres({
    dataDir: options.dataDir,
    port: options.port,
    loadDataDir: dump,
  });
  try {
    const sql = connect(db.url, { max: 1, applicationName: "sluice-embedded" });
    try {
      const { applied } = await migrate(sql);
      if (startedFrom === "snapshot" && applied.length > 0) throw new StaleSnapshotError(applied);
    } finally {
      await sql.end();
    }
  } catch (error) {
    await db.stop();
    throw error;
  }
  return Object.assign(db, { startedFrom, snapshot });
}

async function emptyOrMissing(dir: string): Promise<boolean> {
  try {
    for await (const _ of Deno.readDir(dir)) return false;
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return true;
    throw error;
  }
}
