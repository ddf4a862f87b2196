/**
 * The code generator's settings: the `sluice` key of the project's `deno.json`, and the import
 * map every generated function gets.
 *
 * ```json
 * { "sluice": { "flows": "./flows.ts", "functionsDir": "./supabase/functions" } }
 * ```
 *
 * @module
 */

import { dirname, isAbsolute, resolve } from "node:path";
import { CodegenError } from "./errors.ts";
import { PACKAGE_NAME, registryImports } from "./sluice_package.ts";
import { byCodePoint } from "./_util.ts";

/** Where generated functions go unless `sluice.functionsDir` says otherwise. */
export const DEFAULT_FUNCTIONS_DIR = "./supabase/functions";

/**
 * The flows module unless `sluice.flows` says otherwise: inside the functions directory, so that
 * `supabase functions deploy` ships it with every function.
 */
export const DEFAULT_FLOWS_MODULE = "./supabase/functions/_shared/flows.ts";

/**
 * One entry of the import map a generated function's `deno.json` carries.
 *
 * @example Usage
 * ```ts
 * import type { ImportMapEntry } from "./config.ts";
 *
 * const entry: ImportMapEntry = {
 *   specifier: "postgres",
 *   target: "npm:postgres@3.4.9",
 *   local: false,
 * };
 * ```
 */
export interface ImportMapEntry {
  /** The bare specifier (or prefix, ending in `/`). */
  readonly specifier: string;
  /** An absolute file path for a local target, the specifier or URL as written otherwise. */
  readonly target: string;
  /** Whether `target` is a local file path, to be written relative to each function. */
  readonly local: boolean;
}

/**
 * The generator's resolved settings.
 *
 * @example Usage
 * ```ts ignore
 * import { readCodegenConfig } from "./config.ts";
 *
 * const config = await readCodegenConfig("./deno.json");
 * console.log(config.flowsModule, config.functionsDir);
 * ```
 */
export interface CodegenConfig {
  /** The directory of `deno.json`: the project root every path is relative to. */
  readonly root: string;
  /** The absolute path of `deno.json`. */
  readonly configPath: string;
  /** The absolute path of the flows module. */
  readonly flowsModule: string;
  /** The absolute path of the Supabase functions directory. */
  readonly functionsDir: string;
  /** The project's import map, sorted by specifier. */
  readonly imports: readonly ImportMapEntry[];
  /**
   * Import map specifiers whose local target may lie outside the deploy root
   * (`sluice.allowOutsideDeployRoot`): only for a project that is run from a checkout and never
   * deployed as it is, such as an example inside sluice's own repository.
   */
  readonly allowOutsideDeployRoot: readonly string[];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isRelative(target: string): boolean {
  return target.startsWith("./") || target.startsWith("../");
}

/**
 * The project's `imports`, plus the project's own package when `deno.json` describes one (`name`
 * and `exports`): a function directory has its own `deno.json`, which hides the project's, so
 * the flows module would otherwise lose every bare specifier it uses, including a self-import.
 * sluice itself comes from the registry at this version unless the project maps it.
 */
function importMap(root: string, config: Record<string, unknown>): ImportMapEntry[] {
  const entries = new Map<string, ImportMapEntry>();
  const add = (specifier: string, target: string) => {
    const local = isRelative(target);
    // A prefix mapping ("@/": "./src/") keeps its trailing slash, which resolve() would drop.
    const path = local ? resolve(root, target) + (target.endsWith("/") ? "/" : "") : target;
    entries.set(specifier, { specifier, target: path, local });
  };
  const exports = typeof config.exports === "string" ? { ".": config.exports } : config.exports;
  if (typeof config.name === "string" && isRecord(exports)) {
    for (const [subpath, target] of Object.entries(exports)) {
      if (typeof target !== "string") continue;
      add(subpath === "." ? config.name : `${config.name}/${subpath.replace(/^\.\//, "")}`, target);
    }
  }
  if (isRecord(config.imports)) {
    for (const [specifier, target] of Object.entries(config.imports)) {
      if (typeof target === "string") add(specifier, target);
    }
  }
  // A project that maps sluice nowhere gets it from the registry, pinned to this version.
  const mapsSluice = [...entries.keys()].some((specifier) =>
    specifier === PACKAGE_NAME || specifier.startsWith(`${PACKAGE_NAME}/`)
  );
  if (!mapsSluice) {
    for (const [specifier, target] of registryImports()) add(specifier, target);
  }
  return [...entries.values()].sort((a, b) => byCodePoint(a.specifier, b.specifier));
}

/**
 * Reads the `sluice` settings of a `deno.json`.
 *
 * @param configPath The `deno.json` to read.
 * @returns The resolved settings.
 * @throws {CodegenError} When the file is not JSON, or a setting is not a path
 * (`invalid_config`).
 *
 * @example Usage
 * ```ts ignore
 * import { readCodegenConfig } from "./config.ts";
 *
 * const config = await readCodegenConfig("./deno.json");
 * ```
 */
export async function readCodegenConfig(configPath: string): Promise<CodegenConfig> {
  const path = isAbsolute(configPath) ? configPath : resolve(configPath);
  const invalid = (detail: string) =>
    new CodegenError(`Cannot read the code generator settings from ${path}: ${detail}`, {
      reason: "invalid_config",
      path,
    });
  let config: unknown;
  try {
    config = JSON.parse(await Deno.readTextFile(path));
  } catch (error) {
    throw invalid(
      error instanceof SyntaxError ? `not plain JSON (${error.message})` : String(error),
    );
  }
  const settings = isRecord(config) ? config.sluice ?? {} : undefined;
  if (!isRecord(settings)) {
    throw invalid(
      `expected an optional "sluice" key like { "flows": "${DEFAULT_FLOWS_MODULE}", ` +
        `"functionsDir": "${DEFAULT_FUNCTIONS_DIR}" }, got ${JSON.stringify(settings ?? null)}`,
    );
  }
  const flows = settings.flows ?? DEFAULT_FLOWS_MODULE;
  if (typeof flows !== "string" || flows === "") {
    throw invalid(`"sluice.flows" must be a path, got ${JSON.stringify(flows)}`);
  }
  const functionsDir = settings.functionsDir ?? DEFAULT_FUNCTIONS_DIR;
  if (typeof functionsDir !== "string" || functionsDir === "") {
    throw invalid(`"sluice.functionsDir" must be a path, got ${JSON.stringify(functionsDir)}`);
  }
  const allowOutsideDeployRoot = settings.allowOutsideDeployRoot ?? [];
  if (
    !Array.isArray(allowOutsideDeployRoot) ||
    !allowOutsideDeployRoot.every((entry) => typeof entry === "string" && entry !== "")
  ) {
    throw invalid(
      `"sluice.allowOutsideDeployRoot" must be a list of import map specifiers, got ${
        JSON.stringify(allowOutsideDeployRoot)
      }`,
    );
  }
  const root = dirname(path);
  return {
    allowOutsideDeployRoot: allowOutsideDeployRoot as string[],
    root,
    configPath: path,
    flowsModule: resolve(root, flows),
    functionsDir: resolve(root, functionsDir),
    imports: importMap(root, config as Record<string, unknown>),
  };
}
