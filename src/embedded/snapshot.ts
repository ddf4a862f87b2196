/**
 * The snapshot file of a migrated embedded database: the data directory's tarball followed by a
 * trailer with its SHA-256, written under a temporary name and renamed, so that a reader sees a
 * whole file or none, and a damaged one (a disk error, a hand edit) is noticed before PGlite
 * opens it.
 *
 * @module
 */

import { createHash } from "node:crypto";

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
