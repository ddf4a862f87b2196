/**
 * `generateFunctions()`: the engine of `sluice functions generate`. Imports the flows module named in
 * `deno.json`, plans one worker function per step of every step-queued flow and one per plain
 * flow, and writes (or, in check mode, only compares) the generated files.
 *
 * @module
 */

import { dirname, join, relative, sep } from "node:path";
import { withFunctionTables } from "./_config_toml.ts";
import { byCodePoint } from "./_util.ts";
import { projectPath } from "./project_path.ts";
import { type CodegenConfig, readCodegenConfig } from "./config.ts";
import { assertInsideDeployRoot, deployRoot } from "./deploy_root.ts";
import { CodegenError } from "./errors.ts";
import { importFlowsModule } from "./load_flows.ts";
import {
  type ProjectPath,
  readProjectFile,
  resolveInProject,
  UnsafePathError,
  writeProjectFile,
} from "./project_files.ts";
import { planWorkerFunctions, type WorkerFunctionSpec } from "./plan.ts";
import {
  functionTables,
  GENERATED_MARKER,
  type GeneratedFile,
  renderFunctionFiles,
} from "./render.ts";

/**
 * What the generator found for one file: `unchanged`, `missing` (to be created), `stale` (its
 * text differs) or `extra` (a generated file no function needs any more).
 *
 * @example Usage
 * ```ts
 * import type { FileStatus } from "./generate.ts";
 *
 * const status: FileStatus = "stale";
 * ```
 */
export type FileStatus = "unchanged" | "missing" | "stale" | "extra";

/**
 * One file and its status.
 *
 * @example Usage
 * ```ts
 * import type { FileReport } from "./generate.ts";
 *
 * const report: FileReport = { path: "supabase/functions/greet-user/index.ts", status: "missing" };
 * ```
 */
export interface FileReport {
  /** The path relative to the project root, with `/` separators. */
  readonly path: string;
  /** What the generator found before it wrote anything. */
  readonly status: FileStatus;
}

/**
 * Options of {@linkcode generateFunctions}.
 *
 * @example Usage
 * ```ts
 * import type { GenerateOptions } from "./generate.ts";
 *
 * const options: GenerateOptions = { configPath: "./deno.json", check: true };
 * ```
 */
export interface GenerateOptions {
  /**
   * The `deno.json` whose `sluice` key names the flows module and the functions directory.
   *
   * @default {"./deno.json"}
   */
  readonly configPath?: string;
  /**
   * Compare only: write and remove nothing.
   *
   * @default {false}
   */
  readonly check?: boolean;
}

/**
 * What {@linkcode generateFunctions} found (and, unless checking, fixed).
 *
 * @example Usage
 * ```ts ignore
 * import { generateFunctions } from "./generate.ts";
 *
 * const result = await generateFunctions({ check: true });
 * console.log(result.upToDate, result.functions.length);
 * ```
 */
export interface GenerateResult {
  /** The worker functions, sorted by name. */
  readonly functions: readonly WorkerFunctionSpec[];
  /** Every generated file and every extra one, sorted by path. */
  readonly files: readonly FileReport[];
  /** Whether every file was `unchanged`. */
  readonly upToDate: boolean;
}

async function readText(path: string): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
}

function generatedBy(text: string | undefined): boolean {
  return text !== undefined && text.split("\n", 3).some((line) => line.includes(GENERATED_MARKER));
}

/**
 * Deno's lockfile, which running a function with plain Deno may have left in its directory (the
 * generated `deno.json` turns locking off; an older one did not).
 */
const LOCKFILE = "deno.lock";

/**
 * The files of function directories no function needs any more: a directory whose `index.ts` is
 * generated loses its generated files and a lockfile beside them, and goes when that empties it.
 * A hand-written function, a symbolic link and any other file are never touched.
 */
async function extraFiles(config: CodegenConfig, wanted: ReadonlySet<string>): Promise<string[]> {
  const extra: string[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(config.functionsDir));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return extra;
    throw error;
  }
  for (const entry of entries) {
    if (!entry.isDirectory || wanted.has(entry.name)) continue;
    const dir = join(config.functionsDir, entry.name);
    if (!generatedBy(await readText(join(dir, "index.ts")))) continue;
    extra.push(join(dir, "index.ts"));
    if (generatedBy(await readText(join(dir, "deno.json")))) extra.push(join(dir, "deno.json"));
    const lock = await Deno.lstat(join(dir, LOCKFILE)).catch(() => null);
    if (lock?.isFile) extra.push(join(dir, LOCKFILE));
  }
  return extra;
}

/**
 * Resolves a file the generator writes, refusing what it must not write through: a symbolic link
 * out of the project or to nothing, a function directory that is a link, and a file it did not
 * generate (no marker), which it never overwrites.
 */
async function writablePath(
  config: CodegenConfig,
  file: GeneratedFile,
  generatedOnly: boolean,
): Promise<{ path: ProjectPath; current: string | undefined }> {
  const root = deployRoot(config);
  const absolute = join(config.root, file.path);
  const inFunctions = relative(config.functionsDir, absolute).split(sep);
  if (inFunctions.length === 2 && !inFunctions[0].startsWith("..")) {
    const dir = join(config.functionsDir, inFunctions[0]);
    if ((await Deno.lstat(dir).catch(() => null))?.isSymlink) {
      throw new UnsafePathError(
        `Cannot generate functions: ${
          projectPath(config.root, dir)
        } is a symbolic link; sluice writes a generated function only into a directory of its own ` +
          "(remove the link, or rename the flow so that its function gets another name)",
        { reason: "symlinked_function", path: dir, target: await Deno.readLink(dir) },
      );
    }
  }
  const path = await resolveInProject(root, absolute, file.path);
  const current = await readProjectFile(path, file.path);
  if (generatedOnly && current !== undefined && !generatedBy(current)) {
    throw new UnsafePathError(
      `Cannot generate functions: ${file.path} exists and was not written by sluice (its first ` +
        `lines lack ${
          JSON.stringify(GENERATED_MARKER)
        }); sluice never overwrites a hand-written file, so it is left as it is. Rename the ` +
        "flow or step whose worker function has that name, or move the hand-written function",
      { reason: "not_generated", path: absolute },
    );
  }
  return { path, current };
}

/** The project's `config.toml` with the generated block in place, when that file exists. */
async function configToml(
  config: CodegenConfig,
  specs: readonly WorkerFunctionSpec[],
): Promise<GeneratedFile | undefined> {
  const path = join(dirname(config.functionsDir), "config.toml");
  const shown = projectPath(config.root, path);
  const text = await readProjectFile(
    await resolveInProject(deployRoot(config), path, shown),
    shown,
  );
  if (text === undefined) return undefined;
  const names = [...new Set(specs.map((spec) => spec.functionName))];
  return {
    path: projectPath(config.root, path),
    content: withFunctionTables(text, functionTables(config, specs), names, path),
  };
}

/**
 * Generates the Edge Function entrypoints, their `deno.json` files, the manifest and the function
 * config, or checks that the files on disk equal what it would write.
 *
 * @param options The `deno.json` to read and whether to only check.
 * @returns The functions and what was found for every file.
 * @throws {CodegenError} When the settings or the flows module cannot be turned into functions.
 *
 * @example Usage
 * ```ts ignore
 * import { generateFunctions } from "./generate.ts";
 *
 * const result = await generateFunctions({ check: true });
 * if (!result.upToDate) Deno.exit(1);
 * ```
 */
export async function generateFunctions(options: GenerateOptions = {}): Promise<GenerateResult> {
  const config = await readCodegenConfig(options.configPath ?? "./deno.json");
  assertInsideDeployRoot(config);
  if (await readText(config.flowsModule) === undefined) {
    throw new CodegenError(
      `Cannot generate functions: the flows module ${config.flowsModule} does not exist; write ` +
        `your flows there (export each Flow) or name another module in "sluice.flows" of ` +
        config.configPath,
      { reason: "no_flows_module", path: config.flowsModule },
    );
  }
  const namespace = await importFlowsModule(config);
  const specs = planWorkerFunctions(namespace, projectPath(config.root, config.flowsModule));
  const files = renderFunctionFiles(config, specs);
  const toml = await configToml(config, specs);
  if (toml !== undefined) files.push(toml);

  const reports: FileReport[] = [];
  const writes: { path: ProjectPath; content: string }[] = [];
  for (const file of files) {
    // Every file is checked before any is written: a refusal leaves the project as it was.
    const generatedOnly = file !== toml;
    const { path, current } = await writablePath(config, file, generatedOnly);
    const status = current === undefined
      ? "missing"
      : current === file.content
      ? "unchanged"
      : "stale";
    reports.push({ path: file.path, status });
    if (status !== "unchanged") writes.push({ path, content: file.content });
  }
  const extra = await extraFiles(config, new Set(specs.map((spec) => spec.functionName)));
  for (const path of extra) {
    reports.push({ path: projectPath(config.root, path), status: "extra" });
  }

  if (!options.check) {
    for (const file of writes) await writeProjectFile(file.path, file.content);
    for (const path of extra) await Deno.remove(path);
    for (const dir of new Set(extra.map((path) => dirname(path)))) {
      // Only an emptied directory goes: anything a user put beside the generated files stays.
      if ((await Array.fromAsync(Deno.readDir(dir))).length === 0) await Deno.remove(dir);
    }
  }
  reports.sort((a, b) => byCodePoint(a.path, b.path));
  return {
    functions: specs,
    files: reports,
    upToDate: reports.every((report) => report.status === "unchanged"),
  };
}
