/**
 * The deploy root: the directory that holds `supabase/`, the only files `supabase functions
 * deploy` uploads. A generated function importing a local file outside it would deploy without
 * that file, so the generator refuses it.
 *
 * @module
 */

import { dirname, isAbsolute, relative } from "node:path";
import type { CodegenConfig } from "./config.ts";
import { CodegenError } from "./errors.ts";

/**
 * The directory that holds the Supabase directory (the parent of the functions directory).
 *
 * @param config The generator settings.
 * @returns An absolute path.
 *
 * @example Usage
 * ```ts ignore
 * import { deployRoot } from "./deploy_root.ts";
 *
 * console.log(deployRoot(config)); // "/home/ada/app" for /home/ada/app/supabase/functions
 * ```
 */
export function deployRoot(config: CodegenConfig): string {
  return dirname(dirname(config.functionsDir));
}

/**
 * Refuses a flows module or local import map target outside the deploy root, except the import
 * map specifiers the project lists in `sluice.allowOutsideDeployRoot`.
 *
 * @param config The generator settings.
 * @throws {CodegenError} `outside_deploy_root`, naming the file.
 *
 * @example Usage
 * ```ts ignore
 * import { assertInsideDeployRoot } from "./deploy_root.ts";
 *
 * assertInsideDeployRoot(config);
 * ```
 */
export function assertInsideDeployRoot(config: CodegenConfig): void {
  const root = deployRoot(config);
  const imports = [
    { what: "the flows module", path: config.flowsModule },
    ...config.imports.filter((entry) =>
      entry.local && !config.allowOutsideDeployRoot.includes(entry.specifier)
    ).map((entry) => ({
      what: `the import map entry ${JSON.stringify(entry.specifier)} of ${config.configPath}`,
      path: entry.target,
    })),
  ];
  for (const { what, path } of imports) {
    const inside = relative(root, path);
    if (inside.startsWith("..") || isAbsolute(inside)) {
      throw new CodegenError(
        `Cannot generate functions: ${what}, ${path}, is outside the deploy root ${root}; ` +
          "`supabase functions deploy` uploads only files under it, so every generated function " +
          "would deploy without it. Move it under that directory (flows module default: " +
          "supabase/functions/_shared/flows.ts) or import it by a registry specifier",
        { reason: "outside_deploy_root", path },
      );
    }
  }
}
