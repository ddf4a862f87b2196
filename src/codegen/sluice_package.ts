/**
 * sluice's own package: its registry name, version and library entry points, which a user
 * project's generated functions import by registry specifier (tests/codegen/generate_test.ts
 * checks them against deno.json).
 *
 * @module
 */

/** The package name on JSR. */
export const PACKAGE_NAME = "@sluice/sluice";

/** The package version, which generated functions pin. */
export const PACKAGE_VERSION = "0.1.0";

/** The library's exports (not the CLI), as subpaths of the package. */
export const LIBRARY_EXPORTS: readonly string[] = [".", "./client", "./edge", "./worker"];

/**
 * The import map entries of sluice pinned to this version, e.g. `"@sluice/sluice/edge"` ->
 * `"jsr:@sluice/sluice@0.1.0/edge"`.
 *
 * @returns Specifier and target pairs, in export order.
 *
 * @example Usage
 * ```ts
 * import { registryImports } from "./sluice_package.ts";
 *
 * console.log(registryImports()[0]); // ["@sluice/sluice", "jsr:@sluice/sluice@0.1.0"]
 * ```
 */
export function registryImports(): [string, string][] {
  return LIBRARY_EXPORTS.map((subpath) => {
    const suffix = subpath === "." ? "" : subpath.slice(1);
    return [`${PACKAGE_NAME}${suffix}`, `jsr:${PACKAGE_NAME}@${PACKAGE_VERSION}${suffix}`];
  });
}
