// Small helpers shared by the generator's modules.

import { relative, sep } from "node:path";

/** Orders strings by code point, the same on every machine and locale (output must be stable). */
export function byCodePoint(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** `path` relative to the project root, with `/` separators whatever the platform. */
export function projectPath(root: string, path: string): string {
  return relative(root, path).split(sep).join("/");
}

/** Whether the user asked for stack traces (`SLUICE_DEBUG=1`). */
export function debugRequested(): boolean {
  try {
    return ["1", "true"].includes(Deno.env.get("SLUICE_DEBUG") ?? "");
  } catch {
    return false; // no --allow-env
  }
}
