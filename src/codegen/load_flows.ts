/**
 * Imports a project's flows module for `sluice functions generate` and `sluice dev`. An error
 * while the module loads (a flow definition error such as a duplicate step slug, a syntax error,
 * a missing import) becomes one `CodegenError` line naming the file and the problem, instead of
 * an uncaught stack trace.
 *
 * @module
 */

import { fileURLToPath, pathToFileURL } from "node:url";
import { projectPath } from "./project_path.ts";
import type { CodegenConfig } from "./config.ts";
import { CodegenError } from "./errors.ts";

/** The first frame of `stack` in a file of the project, as `path:line:column` relative to it. */
function projectFrame(stack: string, root: string): string | undefined {
  for (const match of stack.matchAll(/(file:\/\/[^\s()]+?):(\d+):(\d+)/g)) {
    const path = fileURLToPath(match[1]);
    const relative = projectPath(root, path);
    if (!relative.startsWith("../") && !relative.includes("/node_modules/")) {
      return `${relative}:${match[2]}:${match[3]}`;
    }
  }
  return undefined;
}

/**
 * Imports the flows module of `config`.
 *
 * @param config The generator settings.
 * @returns The module's namespace.
 * @throws {CodegenError} `flows_module_failed` when importing it throws; the message names the
 * module, the error and the first place in the project's files it points at.
 *
 * @example Usage
 * ```ts ignore
 * import { readCodegenConfig } from "./config.ts";
 * import { importFlowsModule } from "./load_flows.ts";
 *
 * const namespace = await importFlowsModule(await readCodegenConfig("./deno.json"));
 * ```
 */
export async function importFlowsModule(config: CodegenConfig): Promise<Record<string, unknown>> {
  try {
    return await import(pathToFileURL(config.flowsModule).href);
  } catch (error) {
    const path = projectPath(config.root, config.flowsModule);
    const detail = error instanceof Error
      ? `${error.name === "Error" ? "" : `${error.name}: `}${error.message.split("\n")[0]}`
      : String(error);
    const at = error instanceof Error ? projectFrame(error.stack ?? "", config.root) : undefined;
    throw new CodegenError(
      `Cannot load the flows module ${path}: ${detail}${at === undefined ? "" : ` (at ${at})`}`,
      { reason: "flows_module_failed", path: config.flowsModule, cause: error },
    );
  }
}
