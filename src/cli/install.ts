/**
 * `sluice install`: sets sluice up in a Supabase project. Copies sluice's migrations into
 * `supabase/migrations/` after the project's own (only the ones not copied before; a copy is never
 * rewritten), makes `supabase/config.toml` serve functions with the `per_worker` policy, and maps
 * `@sluice/sluice` in the project's `deno.json`. Everything is checked before anything is written:
 * it writes only inside the project (a symbolic link is followed only to an existing target inside
 * it), edits `config.toml` only where a TOML parser confirms the edit, and prints every change; a
 * second run changes nothing.
 *
 * @module
 */
import { join } from "node:path";
import {
  type ProjectPath,
  readProjectFile,
  resolveInProject,
  writeProjectFile,
} from "../codegen/project_files.ts";
import { PACKAGE_NAME, PACKAGE_VERSION } from "../codegen/sluice_package.ts";
import { parseToml, sameToml, type TomlTable } from "../codegen/toml.ts";
import { MIGRATION_FILES } from "../migrations/migration_files.ts";
import { MIGRATIONS_DIRECTORY } from "../migrations/migrate.ts";
import { readText } from "../migrations/read_text.ts";
import { findSupabaseCopies, migrationNames } from "./_supabase_copies.ts";
import type { CliIo } from "./commands/command_types.ts";

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

/**
 * Thrown when a file of the project cannot be changed safely (a `config.toml` the edit cannot be
 * confirmed on, a migration that sorts after every version sluice can give its copies); nothing
 * was written.
 */
export class InstallRefusedError extends Error {
  override name = "InstallRefusedError";
  /** The file at fault. */
  readonly path: string;

  /**
   * @param message The message.
   * @param path The file at fault.
   */
  constructor(message: string, path: string) {
    super(message);
    this.path = path;
  }
}

const EDGE_RUNTIME = "[edge_runtime]";
const POLICY = 'policy = "per_worker"';
const CONFIG_TOML = "supabase/config.toml";

/** One change install makes: a file to write (or none) and the line that reports it. */
interface Step {
  readonly write?: { readonly path: ProjectPath; readonly text: string };
  readonly line: string;
}

/** `YYYYMMDDHHMMSS` in UTC, the form of Supabase's migration versions. */
function timestamp(ms: number): string {
  return new Date(ms).toISOString().replace(/\D/g, "").slice(0, 14);
}

/**
 * The earliest instant, in whole seconds, whose version sorts after `version`: the next second
 * of a valid `YYYYMMDDHHMMSS`, or for an impossible one (`20261201191960`, as an earlier install
 * could write) the first valid time after it, found by carrying from its first field out of
 * range. `undefined` for a version that is not 14 digits (it sorts before every timestamp of
 * this millennium, or is refused by the caller).
 */
function nextInstantAfter(version: string): number | undefined {
  const match = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})$/.exec(version);
  if (match === null) return undefined;
  const [year, month, day, hour, minute, second] = match.slice(1).map(Number);
  const days = new Date(Date.UTC(year, Math.min(Math.max(month, 1), 12), 0)).getUTCDate();
  const fields: [number, number, number][] = [
    [month, 1, 12],
    [day, 1, days],
    [hour, 0, 23],
    [minute, 0, 59],
    [second, 0, 59],
  ];
  const bad = fields.findIndex(([value, min, max]) => value < min || value > max);
  const at = (...parts: number[]) =>
    Date.UTC(year, (parts[0] ?? 1) - 1, parts[1] ?? 1, parts[2] ?? 0, parts[3] ?? 0, parts[4] ?? 0);
  const values = fields.map(([value]) => value);
  if (bad === -1) return at(...values) + 1000;
  // Too small (month or day 0): that field at its minimum is already later. Too large: the
  // field before it goes up by one, and Date.UTC carries.
  if (values[bad] < fields[bad][1]) return at(...values.slice(0, bad), fields[bad][1]);
  if (bad === 0) return Date.UTC(year + 1, 0, 1);
  return at(...values.slice(0, bad - 1), values[bad - 1] + 1);
}

/** The copies of the migrations not copied yet, versioned after every file already there. */
async function migrationSteps(projectDir: string, supabaseDir: string): Promise<Step[]> {
  const dir = join(supabaseDir, "migrations");
  const copies = await findSupabaseCopies(supabaseDir);
  const missing = MIGRATION_FILES.filter((file) => !copies.has(file));
  if (missing.length === 0) {
    return [{
      line: `migrations: all ${MIGRATION_FILES.length} of sluice's migrations already in place`,
    }];
  }
  // Real UTC times, one second apart, after now and after every file already there, so that a
  // migration the user creates later (named by its time) sorts after sluice's copies.
  const names = (await migrationNames(dir)).filter((name) => /^\d+_/.test(name));
  let next = Math.floor(Date.now() / 1000) * 1000;
  for (const name of names) {
    const after = nextInstantAfter(/^(\d+)_/.exec(name)![1]);
    if (after !== undefined && after > next) next = after;
  }
  const last = names.at(-1);
  if (last !== undefined && `${timestamp(next)}_` < last) {
    throw new InstallRefusedError(
      `Cannot install sluice: supabase/migrations/${last} sorts after every migration version ` +
        "sluice can give its copies (a UTC time YYYYMMDDHHMMSS); rename it after its own time",
      join(dir, last),
    );
  }
  const texts = await Promise.all(
    missing.map((file) => readText(new URL(file, MIGRATIONS_DIRECTORY))),
  );
  const steps: Step[] = [];
  for (const [i, file] of missing.entries()) {
    const name = `${timestamp(next + i * 1000)}_${file}`;
    const shown = `supabase/migrations/${name}`;
    const path = await resolveInProject(projectDir, join(projectDir, shown), shown);
    // A name after every existing one exists only as a dangling link, which resolving refuses.
    steps.push({ write: { path, text: texts[i] }, line: `created ${shown}` });
  }
  return steps;
}

function isTable(value: unknown): value is TomlTable {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const TABLE_HEADER = /^\s*\[\s*(?:edge_runtime|"edge_runtime"|'edge_runtime')\s*\]\s*(?:#.*)?$/;
const ANY_HEADER = /^\s*\[/;
const POLICY_KEY = /^\s*(?:policy|"policy"|'policy')\s*=/;
const DOTTED_KEY = /^\s*(?:edge_runtime|"edge_runtime")\s*\./;
const DOTTED_POLICY = /^\s*(?:edge_runtime|"edge_runtime")\s*\.\s*(?:policy|"policy")\s*=/;

/** The edit on the text: the policy line replaced or added, or the table appended. */
function policyEdit(text: string, current: unknown): string | undefined {
  const lines = text.split("\n");
  const header = lines.findIndex((line) => TABLE_HEADER.test(line));
  if (header !== -1) {
    const next = lines.findIndex((line, i) => i > header && ANY_HEADER.test(line));
    const end = next === -1 ? lines.length : next;
    const at = lines.findIndex((line, i) => i > header && i < end && POLICY_KEY.test(line));
    if (at !== -1) lines[at] = POLICY;
    else lines.splice(header + 1, 0, POLICY);
    return lines.join("\n");
  }
  if (current === undefined) {
    const head = text === "" || text.endsWith("\n") ? text : `${text}\n`;
    return `${head}${head === "" ? "" : "\n"}${EDGE_RUNTIME}\nenabled = true\n${POLICY}\n`;
  }
  // Dotted keys of the root table (edge_runtime.enabled = true), before its first header.
  const first = lines.findIndex((line) => ANY_HEADER.test(line));
  const root = first === -1 ? lines.length : first;
  const at = lines.findIndex((line, i) => i < root && DOTTED_POLICY.test(line));
  if (at !== -1) {
    lines[at] = `edge_runtime.${POLICY}`;
    return lines.join("\n");
  }
  const dotted = lines.findLastIndex((line, i) => i < root && DOTTED_KEY.test(line));
  if (dotted === -1) return undefined;
  lines.splice(dotted + 1, 0, `edge_runtime.${POLICY}`);
  return lines.join("\n");
}

/**
 * `supabase/config.toml` with `[edge_runtime] policy = "per_worker"`, `undefined` when it is
 * already so. The edit is made on the text and accepted only when the result parses to the
 * original document with exactly that policy (and, for a new table, `enabled = true`).
 *
 * @throws {InstallRefusedError} When the file is not TOML or the edit cannot be confirmed.
 */
function withPerWorkerPolicy(text: string, path: string): string | undefined {
  const refuse = (detail: string) =>
    new InstallRefusedError(
      `Cannot update ${CONFIG_TOML} safely: ${detail}; set ${POLICY} in its [edge_runtime] table ` +
        "by hand (local `supabase functions serve` otherwise stops sluice's workers after each " +
        "response), then run install again",
      path,
    );
  const parsed = parseToml(text);
  if ("error" in parsed) throw refuse(`it is not valid TOML (${parsed.error})`);
  const current = parsed.table.edge_runtime;
  if (current !== undefined && !isTable(current)) {
    throw refuse(`its edge_runtime is not a table, got ${JSON.stringify(current)}`);
  }
  if (current?.policy === "per_worker") return undefined;
  const expected: TomlTable = {
    ...parsed.table,
    edge_runtime: { ...(current ?? { enabled: true }), policy: "per_worker" },
  };
  const edited = policyEdit(text, current);
  if (edited === undefined) {
    throw refuse("its edge_runtime table is written in a form install does not edit");
  }
  const check = parseToml(edited);
  if ("error" in check || !sameToml(check.table, expected)) {
    throw refuse(
      "editing its [edge_runtime] table would change more than the policy " +
        `(${"error" in check ? check.error : "the parsed result differs"})`,
    );
  }
  return edited;
}

/** Creates `supabase/config.toml` or sets its edge runtime policy. */
async function configTomlStep(projectDir: string): Promise<Step> {
  const path = await resolveInProject(projectDir, join(projectDir, CONFIG_TOML), CONFIG_TOML);
  const text = await readProjectFile(path, CONFIG_TOML);
  if (text === undefined) {
    const projectId = projectDir.split(/[\\/]/).filter(Boolean).pop() ?? "app";
    return {
      write: {
        path,
        text: `# Created by sluice install; \`supabase init\` writes the complete file.\n` +
          `project_id = ${JSON.stringify(projectId)}\n\n${EDGE_RUNTIME}\nenabled = true\n` +
          `# Keeps a function's isolate alive across requests, so that local serving runs ` +
          `sluice's\n# workers in the background as Supabase's hosted platform does.\n${POLICY}\n`,
      },
      line: `created ${CONFIG_TOML} with [edge_runtime] ${POLICY}`,
    };
  }
  const updated = withPerWorkerPolicy(text, path.real);
  if (updated === undefined) {
    return { line: `${CONFIG_TOML}: [edge_runtime] ${POLICY} already set` };
  }
  return {
    write: { path, text: updated },
    line: `updated ${CONFIG_TOML}: [edge_runtime] ${POLICY}`,
  };
}

/** Creates `deno.json` mapping sluice, or says what to add to an existing one. */
async function denoJsonStep(projectDir: string): Promise<Step> {
  const target = `jsr:${PACKAGE_NAME}@${PACKAGE_VERSION}`;
  const task = `deno run -A --config deno.json ${target}/cli`;
  const path = await resolveInProject(projectDir, join(projectDir, "deno.json"), "deno.json");
  const text = await readProjectFile(path, "deno.json");
  if (text === undefined) {
    const config = { imports: { [PACKAGE_NAME]: target }, tasks: { sluice: task } };
    return {
      write: { path, text: `${JSON.stringify(config, null, 2)}\n` },
      line: `created deno.json mapping ${PACKAGE_NAME} to ${target}, with task "sluice"`,
    };
  }
  let config: { imports?: unknown; tasks?: unknown } | undefined;
  try {
    config = JSON.parse(text);
  } catch {
    config = undefined;
  }
  const has = (key: "imports" | "tasks", name: string) => {
    const value = config?.[key];
    return typeof value === "object" && value !== null && name in value;
  };
  const missing = [
    ...(has("imports", PACKAGE_NAME) ? [] : [
      `${JSON.stringify(PACKAGE_NAME)}: ${JSON.stringify(target)} to its "imports" (or ` +
      "generated functions import that)",
    ]),
    ...(has("tasks", "sluice") ? [] : [
      `"sluice": ${JSON.stringify(task)} to its "tasks" (the \`deno task sluice\` of the guides)`,
    ]),
  ];
  return {
    line: missing.length === 0
      ? `deno.json: ${PACKAGE_NAME} already mapped, task "sluice" already there`
      : `deno.json: left as is; add ${missing.join(", and ")}`,
  };
}

/**
 * Installs sluice into the Supabase project at `projectDir`.
 *
 * @param projectDir The project root (holding `supabase/`).
 * @param io Where to print.
 * @returns The number of files created or changed.
 * @throws {NotASupabaseProjectError} When `projectDir` has no `supabase/` directory.
 * @throws {InstallRefusedError} When `config.toml` cannot be edited safely, or a migration sorts
 * after every version sluice can give its copies.
 * @throws {UnsafePathError} When a file to write is (or goes through) a symbolic link that leads
 * outside the project or to nothing.
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
  const supabase = await resolveInProject(projectDir, join(projectDir, "supabase"), "supabase");
  const isDir = supabase.exists &&
    await Deno.stat(supabase.real).then((info) => info.isDirectory, () => false);
  if (!isDir) throw new NotASupabaseProjectError(projectDir);
  // Every check and every text first: a refusal leaves the project as it was.
  const steps = [
    ...await migrationSteps(projectDir, supabase.real),
    await configTomlStep(projectDir),
    await denoJsonStep(projectDir),
  ];
  for (const step of steps) {
    if (step.write !== undefined) await writeProjectFile(step.write.path, step.write.text);
    io.out(step.line);
  }
  const changes = steps.filter((step) => step.write !== undefined).length;
  io.out(
    changes === 0
      ? "install: nothing to do; sluice is installed"
      : `install: ${changes} changes; next: write supabase/functions/_shared/flows.ts, then ` +
        "`deno task sluice functions generate` and `supabase migration up` (or " +
        "`deno task sluice migrate`)",
  );
  return changes;
}
