/**
 * An embedded database with sluice installed, started in seconds: migrating a fresh PGlite takes a
 * minute on a busy machine, so the first start keeps a dump of the migrated data directory in a
 * cache directory, named by a digest of the migrations and PGlite's version, and every later new
 * database is loaded from that dump instead of migrating again (`migrate` then only checks its
 * ledger). A data directory that already holds a database is opened and migrated as it is.
 *
 * The snapshot file is the tarball followed by a trailer with its SHA-256, written under a
 * temporary name and renamed: a reader sees a whole file or none, and a damaged one (a disk
 * error, a hand edit) is noticed before PGlite opens it. A snapshot that does not load, or whose
 * ledger lacks a migration, is set aside and the start migrates from scratch (saving a new one).
 *
 * @module
 */

import { createHash } from "node:crypto";
import { migrate, migrationsDigest } from "../migrations/migrate.ts";
import { connect } from "../db/connect.ts";
import {
  type EmbeddedPostgres,
  PGLITE_VERSION,
  startEmbeddedPostgres,
  type StartEmbeddedPostgresOptions,
} from "./embedded_postgres.ts";

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

const TRAILER_PREFIX = "\nsluice-snapshot sha256=";
/** The trailer: its prefix, 64 hex digits, a newline. */
const TRAILER_LENGTH = TRAILER_PREFIX.length + 64 + 1;

/** What {@linkcode readSnapshot} found. */
export type SnapshotRead =
  | { readonly state: "missing" }
  | { readonly state: "damaged"; readonly reason: string }
  | { readonly state: "ok"; readonly dump: Blob };

/**
 * Reads a snapshot file written by {@linkcode writeSnapshot} and checks its trailer.
 *
 * @param path The snapshot file.
 * @returns The dump, or why there is none.
 */
export async function readSnapshot(path: string): Promise<SnapshotRead> {
  let bytes: Uint8Array<ArrayBuffer>;
  try {
    bytes = await Deno.readFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return { state: "missing" };
    throw error;
  }
  if (bytes.length < TRAILER_LENGTH) {
    return { state: "damaged", reason: `${bytes.length} bytes, shorter than its trailer` };
  }
  const tarball = bytes.subarray(0, bytes.length - TRAILER_LENGTH);
  const trailer = new TextDecoder().decode(bytes.subarray(tarball.length));
  if (!trailer.startsWith(TRAILER_PREFIX) || !trailer.endsWith("\n")) {
    return { state: "damaged", reason: "no sluice-snapshot trailer at its end" };
  }
  const expected = trailer.slice(TRAILER_PREFIX.length, -1);
  const actual = sha256(tarball);
  if (actual !== expected) {
    return {
      state: "damaged",
      reason: `its contents hash to ${actual.slice(0, 12)}..., its trailer says ${
        expected.slice(0, 12)
      }...`,
    };
  }
  // PGlite takes what is not a tarball for a gzipped one and fails with an uncaught rejection.
  if (new TextDecoder().decode(tarball.subarray(257, 262)) !== "ustar") {
    return { state: "damaged", reason: "not a tarball" };
  }
  return { state: "ok", dump: new Blob([tarball]) };
}

/**
 * Writes a snapshot under a temporary name in the same directory and renames it over `path`, so
 * that a concurrent start reads the old file or the new one, never half of one; owner-only
 * (0600 in a 0700 directory), since it holds the database's files.
 *
 * @param path The snapshot file.
 * @param dump The data directory's tarball.
 */
export async function writeSnapshot(path: string, dump: Blob): Promise<void> {
  const dir = path.slice(0, path.lastIndexOf("/"));
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  const tarball = new Uint8Array(await dump.arrayBuffer());
  const trailer = new TextEncoder().encode(`${TRAILER_PREFIX}${sha256(tarball)}\n`);
  const temporary = `${path}.${crypto.randomUUID()}.partial`;
  try {
    const file = await Deno.open(temporary, { write: true, createNew: true, mode: 0o600 });
    try {
      await writeAll(file, tarball);
      await writeAll(file, trailer);
    } finally {
      file.close();
    }
    await Deno.rename(temporary, path);
  } catch (error) {
    await Deno.remove(temporary).catch(() => {});
    throw error;
  }
}

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

async function writeAll(file: Deno.FsFile, data: Uint8Array): Promise<void> {
  let written = 0;
  while (written < data.length) written += await file.write(data.subarray(written));
}
