/**
 * TOML through a real parser, for the edits sluice makes to a user's `supabase/config.toml`:
 * each edit is made on the text (comments and layout stay), then the result is parsed and
 * compared with what the edit should mean; an edit that does not parse, or changes anything else,
 * is refused instead of written. The parser is pinned by its full npm specifier (deno.json maps
 * `smol-toml` to the same): a package loaded from a remote URL gets no import map.
 *
 * @module
 */

import { isDeepStrictEqual } from "node:util";
// deno-lint-ignore no-import-prefix
import { parse } from "npm:smol-toml@1.9.1";

/** A parsed TOML document as plain data: plain objects and arrays, dates as their TOML text. */
export type TomlTable = Record<string, unknown>;

function plain(value: unknown): unknown {
  if (value instanceof Date) return `date:${String(value)}`;
  if (Array.isArray(value)) return value.map(plain);
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, plain(inner)]));
  }
  return value;
}

/**
 * Parses a TOML document.
 *
 * @param text The document.
 * @returns The table as plain data, or the parser's complaint (its first line).
 *
 * @example Usage
 * ```ts
 * import { parseToml } from "./toml.ts";
 *
 * const parsed = parseToml('[edge_runtime]\npolicy = "per_worker"\n');
 * console.log("table" in parsed); // true
 * ```
 */
export function parseToml(text: string): { table: TomlTable } | { error: string } {
  try {
    return { table: plain(parse(text)) as TomlTable };
  } catch (error) {
    return { error: (error instanceof Error ? error.message : String(error)).split("\n")[0] };
  }
}

/**
 * Whether two parsed documents are the same data.
 *
 * @param a One table.
 * @param b The other.
 * @returns `true` when equal, dates included.
 *
 * @example Usage
 * ```ts
 * import { parseToml, sameToml } from "./toml.ts";
 *
 * const a = parseToml("a = 1 # one\n");
 * const b = parseToml("a = 1\n");
 * if ("table" in a && "table" in b) console.log(sameToml(a.table, b.table)); // true
 * ```
 */
export function sameToml(a: TomlTable, b: TomlTable): boolean {
  return isDeepStrictEqual(a, b);
}
