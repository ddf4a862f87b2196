/**
 * Where `sluice install` and `sluice functions generate` may write: only inside the project. A
 * path is resolved one component at a time; a symbolic link is followed only when its target
 * exists and lies inside the project, so neither command writes outside the project or creates
 * a file through a dangling link.
 *
 * @module
 */

import { isAbsolute, join, relative, sep } from "node:path";

/**
 * Why a path was refused:
 *
 * - `outside_project`: the path, or a symbolic link on the way to it, leads outside the project;
 * - `dangling_link`: a symbolic link on the way points at nothing (writing would create its
 *   target, wherever that is);
 * - `not_a_file`: a file was expected and something else is there;
 * - `symlinked_function`: a generated function's directory is a symbolic link;
 * - `not_generated`: a file the generator would write exists without the generated marker (a
 *   hand-written file, which is never overwritten).
 *
 * @example Usage
 * ```ts
 * import type { UnsafePathReason } from "./project_files.ts";
 *
 * const reason: UnsafePathReason = "dangling_link";
 * ```
 */
export type UnsafePathReason =
  | "outside_project"
  | "dangling_link"
  | "not_a_file"
  | "symlinked_function"
  | "not_generated";

/**
 * Thrown before anything is written when a path the command would write is unsafe.
 *
 * @example Usage
 * ```ts ignore
 * import { resolveInProject, UnsafePathError } from "./project_files.ts";
 *
 * try {
 *   await resolveInProject("/app", "/app/supabase/config.toml");
 * } catch (error) {
 *   if (error instanceof UnsafePathError) console.error(error.reason, error.path);
 * }
 * ```
 */
export class UnsafePathError extends Error {
  override name = "UnsafePathError";
  /** Why it was refused. */
  readonly reason: UnsafePathReason;
  /** The path as the command would write it. */
  readonly path: string;
  /** Where a symbolic link on the way points, when one is at fault. */
  readonly target: string | undefined;

  /**
   * @param message The message.
   * @param fields The reason, the path and the link target.
   */
  constructor(
    message: string,
    fields: { reason: UnsafePathReason; path: string; target?: string },
  ) {
    super(message);
    this.reason = fields.reason;
    this.path = fields.path;
    this.target = fields.target;
  }
}

/**
 * A path inside the project, resolved: `real` is where reading and writing go (every symbolic
 * link on the way replaced by its target), `exists` whether something is there.
 *
 * @example Usage
 * ```ts
 * import type { ProjectPath } from "./project_files.ts";
 *
 * const path: ProjectPath = { real: "/app/supabase/config.toml", exists: true };
 * ```
 */
export interface ProjectPath {
  /** The path with every symbolic link on the way resolved. */
  readonly real: string;
  /** Whether a file or directory is there. */
  readonly exists: boolean;
}

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

async function lstatOrNull(path: string): Promise<Deno.FileInfo | null> {
  try {
    return await Deno.lstat(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
}

/**
 * Resolves `path` (absolute, lexically under `root`) one component at a time.
 *
 * @param root The project directory.
 * @param path The path to write or read.
 * @param shown How messages name the path (default: relative to `root`).
 * @returns Where it really is, and whether it exists.
 * @throws {UnsafePathError} `outside_project` or `dangling_link`.
 *
 * @example Usage
 * ```ts ignore
 * import { resolveInProject } from "./project_files.ts";
 *
 * const { real, exists } = await resolveInProject("/app", "/app/supabase/config.toml");
 * ```
 */
export async function resolveInProject(
  root: string,
  path: string,
  shown = relative(root, path).split(sep).join("/"),
): Promise<ProjectPath> {
  const realRoot = await Deno.realPath(root);
  if (!inside(root, path)) {
    throw new UnsafePathError(
      `Cannot write ${shown}: it is outside the project ${realRoot}; sluice writes only inside it`,
      { reason: "outside_project", path },
    );
  }
  const parts = relative(root, path).split(sep).filter((part) => part !== "");
  let current = realRoot;
  for (const [i, part] of parts.entries()) {
    const next = join(current, part);
    const info = await lstatOrNull(next);
    if (info === null) return { real: join(next, ...parts.slice(i + 1)), exists: false };
    if (!info.isSymlink) {
      current = next;
      continue;
    }
    const target = await Deno.readLink(next);
    let resolved: string;
    try {
      resolved = await Deno.realPath(next);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
      throw new UnsafePathError(
        `Cannot write ${shown}: ${
          join(...parts.slice(0, i + 1))
        } is a symbolic link to ${target}, which does not exist; sluice never creates a file ` +
          "through a dangling link (remove the link, or create what it points at)",
        { reason: "dangling_link", path, target },
      );
    }
    if (!inside(realRoot, resolved)) {
      throw new UnsafePathError(
        `Cannot write ${shown}: ${
          join(...parts.slice(0, i + 1))
        } is a symbolic link to ${resolved}, outside the project ${realRoot}; sluice writes ` +
          "only inside the project (replace the link with the file itself)",
        { reason: "outside_project", path, target },
      );
    }
    current = resolved;
  }
  return { real: current, exists: true };
}

/**
 * The text of a resolved file, or `undefined` when nothing is there.
 *
 * @param path The resolved path.
 * @param shown How messages name it.
 * @returns The text.
 * @throws {UnsafePathError} `not_a_file` when a directory (or other non-file) is there.
 *
 * @example Usage
 * ```ts ignore
 * import { readProjectFile, resolveInProject } from "./project_files.ts";
 *
 * const text = await readProjectFile(await resolveInProject("/app", "/app/deno.json"), "deno.json");
 * ```
 */
export async function readProjectFile(
  path: ProjectPath,
  shown: string,
): Promise<string | undefined> {
  if (!path.exists) return undefined;
  const info = await Deno.stat(path.real);
  if (!info.isFile) {
    throw new UnsafePathError(`Cannot write ${shown}: it exists and is not a file`, {
      reason: "not_a_file",
      path: path.real,
    });
  }
  return await Deno.readTextFile(path.real);
}

/**
 * Writes a resolved file: a new one only if nothing appeared there meanwhile (`createNew`), an
 * existing one in place.
 *
 * @param path The resolved path.
 * @param text The complete text.
 *
 * @example Usage
 * ```ts ignore
 * import { resolveInProject, writeProjectFile } from "./project_files.ts";
 *
 * await writeProjectFile(await resolveInProject("/app", "/app/deno.json"), "{}\n");
 * ```
 */
export async function writeProjectFile(path: ProjectPath, text: string): Promise<void> {
  if (!path.exists) await Deno.mkdir(join(path.real, ".."), { recursive: true });
  await Deno.writeTextFile(path.real, text, path.exists ? {} : { createNew: true });
}
