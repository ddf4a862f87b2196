/**
 * Paths as the generator writes them: relative to the project root, with `/` separators.
 *
 * @module
 */

import { relative, sep } from "node:path";

/** `path` relative to the project root, with `/` separators whatever the platform. */
export function projectPath(root: string, path: string): string {
  return relative(root, path).split(sep).join("/");
}
