/**
 * `sluice install`: sets sluice up in a Supabase project. Copies sluice's migrations into
 * `supabase/migrations/` after the project's own (only the ones not copied before; a copy is never
 * rewritten), makes `supabase/config.toml` serve functions with the `per_worker` policy, and maps
 * `@sluice/sluice` in the project's `deno.json`. Prints every change; a second run changes nothing.
 *
 * @module
 */
import { join } from "node:path";
import { PACKAGE_NAME, PACKAGE_VERSION } from "../codegen/sluice_package.ts";
import { MIGRATION_FILES } from "../ops/migration_files.ts";
import { MIGRATIONS_DIRECTORY } from "../ops/migrate.ts";
import { readText } from "../ops/_read_text.ts";
import { findSupabaseCopies, migrationNames } from "./_supabase_copies.ts";
import type { CliIo } from "./_io.ts";

/** Thrown when the directory is not a Supabase project; nothing was written. */
export class NotASupabaseProjectError extends Error {
  override name = "NotASupabaseProjectError";
  /** The directory that lacks `supabase/`. */
  readonly projectDir: string;

  /** @param projectDir The directory that lacks `supabase/`. */
  constructor(projectDir: string) {
    super(
      `Cannot install sluice: ${projectDir} has no supabase/ directory; run this in your ` +
        "Supabase project's root, or create the project first with `supabase init`",
    );
    this.projectDir = projectDir;
  }
}

const EDGE_RUNTIME = "[edge_runtime]";
const POLICY = 'policy = "per_worker"';

/** `YYYYMMDDHHMMSS` in UTC, the form of Supabase's migration versions. */
function timestamp(date: Date): bigint {
  return BigInt(date.toISOString().replace(/\D/g, "").slice(0, 14));
}

/** Copies the migrations not copied yet, versioned after every file already there. */
async function installMigrations(supabaseDir: string, io: CliIo): Promise<number> {
  const dir = join(supabaseDir, "migrations");
  const copies = await findSupabaseCopies(supabaseDir);
  const missing = MIGRATION_FILES.filter((file) => !copies.has(file));
  if (missing.length === 0) {
    io.out(`migrations: all ${MIGRATION_FILES.length} of sluice's migrations already in place`);
    return 0;
  }
  const versions = (await migrationNames(dir)).map((name) => /^(\d+)_/.exec(name)?.[1])
    .filter((version) => version !== undefined).map((version) => BigInt(version));
  const last = versions.reduce((a, b) => (a > b ? a : b), 0n);
  let version = timestamp(new Date()) > last ? timestamp(new Date()) : last + 1n;
  const texts = await Promise.all(
    missing.map((file) => readText(new URL(file, MIGRATIONS_DIRECTORY))),
  );
  await Deno.mkdir(dir, { recursive: true });
  for (const [i, file] of missing.entries()) {
    const name = `${version++}_${file}`;
    await Deno.writeTextFile(join(dir, name), texts[i], { createNew: true });
    io.out(`created supabase/migrations/${name}`);
  }
  return missing.length;
}

/**
 * The text with `[edge_runtime]` `policy = "per_worker"`: the policy line replaced or added, the
 * table appended when absent. `undefined` when it is already so.
 */
function withPerWorkerPolicy(text: string): string | undefined {
  const lines = text.split("\n");
  const start = lines.findIndex((line) => line.trim() === EDGE_RUNTIME);
  if (start === -1) {
    const head = text === "" || text.endsWith("\n") ? text : `${text}\n`;
    return `${head}${head === "" ? "" : "\n"}${EDGE_RUNTIME}\nenabled = true\n${POLICY}\n`;
  }
  const next = lines.findIndex((line, i) => i > start && /^\s*\[/.test(line));
  const end = next === -1 ? lines.length : next;
  const at = lines.findIndex((line, i) => i > start && i < end && /^\s*policy\s*=/.test(line));
  if (at !== -1 && lines[at].replace(/\s+/g, "") === POLICY.replace(/\s+/g, "")) return undefined;
  if (at !== -1) lines[at] = POLICY;
  else lines.splice(start + 1, 0, POLICY);
  return lines.join("\n");
}

async function readIfExists(path: string): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
}

/** Creates `supabase/config.toml` or sets its edge runtime policy. */
async function installConfigToml(projectDir: string, io: CliIo): Promise<number> {
  const path = join(projectDir, "supabase", "config.toml");
  const text = await readIfExists(path);
  if (text === undefined) {
    const projectId = projectDir.split(/[\\/]/).filter(Boolean).pop() ?? "app";
    await Deno.writeTextFile(
      path,
      `# Created by sluice install; \`supabase init\` writes the complete file.\n` +
        `project_id = ${JSON.stringify(projectId)}\n\n${EDGE_RUNTIME}\nenabled = true\n` +
        `# Keeps a function's isolate alive across requests, so that local serving runs sluice's\n` +
        `# workers in the background as Supabase's hosted platform does.\n${POLICY}\n`,
    );
    io.out(`created supabase/config.toml with [edge_runtime] ${POLICY}`);
    return 1;
  }
  const updated = withPerWorkerPolicy(text);
  if (updated === undefined) {
    io.out(`supabase/config.toml: [edge_runtime] ${POLICY} already set`);
    return 0;
  }
  await Deno.writeTextFile(path, updated);
  io.out(`updated supabase/config.toml: [edge_runtime] ${POLICY}`);
  return 1;
}

/** Creates `deno.json` mapping sluice, or says what to add to an existing one. */
async function installDenoJson(projectDir: string, io: CliIo): Promise<number> {
  const target = `jsr:${PACKAGE_NAME}@${PACKAGE_VERSION}`;
  const path = join(projectDir, "deno.json");
  const text = await readIfExists(path);
  if (text === undefined) {
    const config = {
      imports: { [PACKAGE_NAME]: target },
      tasks: { sluice: `deno run -A --config deno.json ${target}/cli` },
    };
    await Deno.writeTextFile(path, `${JSON.stringify(config, null, 2)}\n`);
    io.out(`created deno.json mapping ${PACKAGE_NAME} to ${target}, with task "sluice"`);
    return 1;
  }
  let imports: unknown;
  try {
    imports = JSON.parse(text)?.imports;
  } catch {
    imports = undefined;
  }
  const mapped = typeof imports === "object" && imports !== null && PACKAGE_NAME in imports;
  if (mapped) {
    io.out(`deno.json: ${PACKAGE_NAME} already mapped`);
  } else {
    io.out(
      `deno.json: left as is; add ${JSON.stringify(PACKAGE_NAME)}: ${
        JSON.stringify(target)
      } to its "imports" (or generated functions import that)`,
    );
  }
  return 0;
}

/**
 * Installs sluice into the Supabase project at `projectDir`.
 *
 * @param projectDir The project root (holding `supabase/`).
 * @param io Where to print.
 * @returns The number of files created or changed.
 * @throws {NotASupabaseProjectError} When `projectDir` has no `supabase/` directory.
 *
 * @example Usage
 * ```ts ignore
 * import { install } from "./install.ts";
 *
 * await install(Deno.cwd());
 * ```
 */
export async function install(
  projectDir: string,
  io: CliIo = { out: console.log, err: console.error },
): Promise<number> {
  const supabaseDir = join(projectDir, "supabase");
  const isDir = await Deno.stat(supabaseDir).then((info) => info.isDirectory, () => false);
  if (!isDir) throw new NotASupabaseProjectError(projectDir);
  const changes = await installMigrations(supabaseDir, io) +
    await installConfigToml(projectDir, io) + await installDenoJson(projectDir, io);
  io.out(
    changes === 0
      ? "install: nothing to do; sluice is installed"
      : `install: ${changes} changes; next: write supabase/functions/_shared/flows.ts, then ` +
        "`sluice functions generate` and `supabase migration up` (or `sluice migrate`)",
  );
  return changes;
}
