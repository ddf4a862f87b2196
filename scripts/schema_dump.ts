/**
 * `deno task schema:dump [--check] [--force] [--migrations DIR]`: the readable sources of schema
 * `sluice` under `supabase/schemas/` (one file per routine name, table and view:
 * scripts/_sql_sources.ts) and the routine index of `docs/sql.md`.
 *
 * Applies the migrations to an empty throwaway cluster (`deno task db:migrate`'s runner, so PGMQ
 * comes from the compat layer there), dumps schema `sluice` with that cluster's own `pg_dump`, and
 * normalizes the text so that it depends on the migrations only, then splits it. Without
 * `--check` it writes the sources and the index; a source file that differs from the migrations may hold an edit not yet turned into a
 * migration, so it stops naming such files unless `--force` (after a hand-written migration) says
 * to overwrite them. With `--check` it compares instead and exits 1 with a unified diff when the
 * migrations create something other than what is committed. `deno task check` runs the check.
 *
 * @module
 */
import { dirname } from "node:path";
import postgres from "postgres";
import { migrate, MIGRATIONS_DIRECTORY } from "../src/migrations/migrate.ts";
import { findPostgresBinaries, startTempPostgres } from "../dev/temp_postgres.ts";
import { type MigrationText, sourceFiles, SOURCES_DIRECTORY, withIndex } from "./_sql_sources.ts";

const ROOT = new URL("../", import.meta.url);
/** The doc that holds the routine index. */
const SQL_DOC = new URL("docs/sql.md", ROOT);

/**
 * Makes pg_dump's output depend on the migrations only: drops the lines that carry server or
 * pg_dump versions, session settings and pg_dump's random `\restrict` key, and folds blank runs.
 *
 * @example
 * ```ts
 * import { normalizeDump } from "./schema_dump.ts";
 * normalizeDump("-- Dumped by pg_dump version 15.18\nSET lock_timeout = 0;\n\ncreate table t ();\n");
 * ```
 */
export function normalizeDump(dump: string): string {
  const dropped =
    /^(-- Dumped (from database|by pg_dump) version|SET |SELECT pg_catalog\.set_config|\\(un)?restrict )/;
  const lines = dump.split("\n").filter((line) => !dropped.test(line));
  const folded = lines.join("\n").replace(/\n{3,}/g, "\n\n").trim();
  return `${folded}\n`;
}

/**
 * Applies the migrations in `directory` to a fresh throwaway cluster and returns the normalized
 * dump of schema `sluice`.
 *
 * @example
 * ```ts ignore
 * import { dumpSchema } from "./schema_dump.ts";
 * console.log(await dumpSchema());
 * ```
 */
export async function dumpSchema(directory: URL | string = MIGRATIONS_DIRECTORY): Promise<string> {
  // pg_dump refuses a newer server; the one beside initdb always matches the cluster.
  const { initdb } = await findPostgresBinaries();
  await using cluster = await startTempPostgres();
  const sql = postgres(cluster.url, { prepare: false, max: 1, onnotice: () => {} });
  try {
    await migrate(sql, { directory });
  } finally {
    await sql.end();
  }
  const { code, stdout, stderr } = await new Deno.Command(`${dirname(initdb)}/pg_dump`, {
    args: ["--schema-only", "--schema=sluice", "--no-owner", "--no-privileges", cluster.url],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  if (code !== 0) {
    throw new Error(
      `Cannot dump schema sluice: pg_dump exited with ${code}: ${decoder.decode(stderr)}`,
    );
  }
  return normalizeDump(decoder.decode(stdout));
}

async function unifiedDiff(path: string, expected: string, actual: string): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "sluice-schema-" });
  try {
    await Deno.writeTextFile(`${dir}/committed`, expected);
    await Deno.writeTextFile(`${dir}/migrated`, actual);
    const { stdout } = await new Deno.Command("diff", {
      args: [
        "-u",
        "--label",
        `${path} (committed)`,
        "--label",
        `${path} (from supabase/migrations/)`,
        `${dir}/committed`,
        `${dir}/migrated`,
      ],
      stdout: "piped",
    }).output();
    return new TextDecoder().decode(stdout);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Every generated file, by path from the repository root, for one set of migrations. */
async function generatedFiles(directory: URL | string): Promise<Map<string, string>> {
  const dump = await dumpSchema(directory);
  const { files, index } = sourceFiles(dump, await migrationTexts(directory));
  const generated = new Map<string, string>();
  for (const [file, text] of files) generated.set(`${SOURCES_DIRECTORY}${file}`, text);
  const doc = await Deno.readTextFile(SQL_DOC);
  generated.set("docs/sql.md", await formatMarkdown(withIndex(doc, index)));
  return generated;
}

async function migrationTexts(directory: URL | string): Promise<MigrationText[]> {
  const dir = typeof directory === "string"
    ? new URL(directory.replace(/\/?$/, "/"), `file://${Deno.cwd()}/`)
    : directory;
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isFile && entry.name.endsWith(".sql")) names.push(entry.name);
  }
  names.sort();
  return await Promise.all(
    names.map(async (file) => ({ file, text: await Deno.readTextFile(new URL(file, dir)) })),
  );
}

/** `text` as `deno fmt` formats Markdown here, so that the generated doc stays formatted. */
async function formatMarkdown(text: string): Promise<string> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--ext=md", "--line-width=100", "-"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(text));
  await writer.close();
  const { code, stdout, stderr } = await child.output();
  if (code !== 0) {
    throw new Error(`Cannot format docs/sql.md: deno fmt: ${new TextDecoder().decode(stderr)}`);
  }
  return new TextDecoder().decode(stdout);
}

/** The committed files under `supabase/schemas/`, by path from the repository root. */
async function committedSources(): Promise<string[]> {
  const found: string[] = [];
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(new URL(dir, ROOT))) {
      if (entry.isDirectory) await walk(`${dir}${entry.name}/`);
      else if (entry.isFile) found.push(`${dir}${entry.name}`);
    }
  };
  try {
    await walk(SOURCES_DIRECTORY);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  return found.sort();
}

async function main(args: string[]): Promise<number> {
  const check = args.includes("--check");
  const force = args.includes("--force");
  const at = args.indexOf("--migrations");
  const directory = at === -1 ? MIGRATIONS_DIRECTORY : args[at + 1];
  if (directory === undefined) {
    console.error("Cannot dump the schema: --migrations needs a directory");
    return 2;
  }
  let generated: Map<string, string>;
  try {
    generated = await generatedFiles(directory);
  } catch (error) {
    // A failing migration or a missing PostgreSQL deserves one clear line, not a stack trace.
    console.error(error instanceof Error ? error.message : String(error));
    return 1;
  }
  const read = (path: string) => Deno.readTextFile(new URL(path, ROOT)).catch(() => undefined);
  const stale: string[] = [];
  for (const [path, text] of generated) if (await read(path) !== text) stale.push(path);
  const extra = (await committedSources()).filter((path) => !generated.has(path));
  if (check) {
    if (stale.length === 0 && extra.length === 0) {
      console.log(
        "schema: supabase/schemas/ and docs/sql.md match the migrations",
      );
      return 0;
    }
    console.error(
      "Cannot confirm the schema: what the migrations create differs from the committed " +
        `${[...stale, ...extra].join(", ")}. After a hand-written migration run ` +
        "'deno task schema:dump'; after editing supabase/schemas/, 'deno task sql:migration <name>'",
    );
    for (const path of stale) {
      console.log(await unifiedDiff(path, (await read(path)) ?? "", generated.get(path)!));
    }
    for (const path of extra) console.log(`${path}: no such object in the migrations`);
    return 1;
  }
  // A source that differs may hold an edit not yet turned into a migration.
  const unsaved = [...stale.filter((path) => path.startsWith(SOURCES_DIRECTORY)), ...extra];
  const existing = [];
  for (const path of unsaved) if (await read(path) !== undefined) existing.push(path);
  if (existing.length > 0 && !force) {
    console.error(
      `Cannot write the sources: ${existing.join(", ")} differ from what the migrations create. ` +
        "If they hold edits, 'deno task sql:migration <name>' turns them into a migration; after a " +
        "hand-written migration, 'deno task schema:dump --force' overwrites them",
    );
    return 1;
  }
  for (const [path, text] of generated) {
    const url = new URL(path, ROOT);
    await Deno.mkdir(new URL(".", url), { recursive: true });
    await Deno.writeTextFile(url, text);
  }
  for (const path of extra) await Deno.remove(new URL(path, ROOT));
  console.log(
    `schema: wrote ${generated.size - 1} files under ${SOURCES_DIRECTORY} and ` +
      "the routine index of docs/sql.md",
  );
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
