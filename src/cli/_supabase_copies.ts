// Finds the copies of sluice's migrations that `sluice install` made in a Supabase project.

import { join } from "node:path";
import { MIGRATION_FILES } from "../migrations/migration_files.ts";

/**
 * The `*.sql` files of a Supabase project's migrations directory, in code-point order (empty when
 * the directory does not exist).
 */
export async function migrationNames(migrationsDir: string): Promise<string[]> {
  const names: string[] = [];
  try {
    for await (const entry of Deno.readDir(migrationsDir)) {
      if (entry.isFile && entry.name.endsWith(".sql")) names.push(entry.name);
    }
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return names;
    throw error;
  }
  return names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * sluice's file name -> its copy in the directory: the file itself (`<version>_<name>.sql`, as in
 * sluice's repository) or `<new version>_<sluice's file name>`, the name `sluice install` gives it.
 */
export async function findSupabaseCopies(supabaseDir: string): Promise<Map<string, string>> {
  const names = await migrationNames(join(supabaseDir, "migrations"));
  const copies = new Map<string, string>();
  for (const file of MIGRATION_FILES) {
    const copy = names.find((name) => name === file || isCopyName(name, file));
    if (copy !== undefined) copies.set(file, copy);
  }
  return copies;
}

function isCopyName(name: string, file: string): boolean {
  return name.endsWith(`_${file}`) && /^\d+$/.test(name.slice(0, -file.length - 1));
}
