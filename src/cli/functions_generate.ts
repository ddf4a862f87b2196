/**
 * `sluice functions generate [--check] [--config <deno.json>]` (`deno task gen:functions` in this
 * repository): writes one Supabase Edge Function per worker function of the flows module
 * (`"sluice": { "flows": ... }` in `deno.json`, default `supabase/functions/_shared/flows.ts`),
 * plus the manifest and the function config. With `--check` it writes nothing and exits 1 when any
 * generated file is missing, stale or extra.
 *
 * @module
 */

import { QueueNameError } from "../dsl/errors.ts";
import { CodegenError } from "../codegen/errors.ts";
import { debugRequested } from "./debug_requested.ts";
import { type FileStatus, generateFunctions } from "../codegen/generate.ts";
import { UnsafePathError } from "../codegen/project_files.ts";
import type { CliIo } from "./commands/command_types.ts";

type Change = Exclude<FileStatus, "unchanged">;

const CHECK_LABEL: Record<Change, string> = { missing: "missing", stale: "stale", extra: "extra" };
const WRITE_LABEL: Record<Change, string> = {
  missing: "created",
  stale: "updated",
  extra: "removed",
};

/** Options of {@linkcode functionsGenerate}. */
export interface FunctionsGenerateOptions {
  /** Write nothing; fail when a generated file is missing, stale or extra. */
  readonly check: boolean;
  /**
   * The project's `deno.json`.
   *
   * @default {"./deno.json"}
   */
  readonly configPath?: string;
}

/**
 * Runs the generator and prints each file it changed (or, with `check`, would change).
 *
 * @param options Check mode and the project config.
 * @param io Where to print.
 * @returns The exit code: 0 done or up to date, 1 stale in check mode or failed.
 *
 * @example Usage
 * ```ts ignore
 * import { functionsGenerate } from "./functions_generate.ts";
 *
 * Deno.exit(await functionsGenerate({ check: true }, { out: console.log, err: console.error }));
 * ```
 */
export async function functionsGenerate(
  options: FunctionsGenerateOptions,
  io: CliIo,
): Promise<number> {
  const { check, configPath } = options;
  try {
    const result = await generateFunctions({ configPath, check });
    const changed = result.files.filter((file) => file.status !== "unchanged");
    const labels = check ? CHECK_LABEL : WRITE_LABEL;
    for (const file of changed) {
      io.out(`${labels[file.status as Change].padEnd(7)} ${file.path}`);
    }
    const generated = result.files.filter((file) => file.status !== "extra").length;
    const functions = new Set(result.functions.map((spec) => spec.functionName)).size;
    const summary = `${functions} worker functions, ${generated} files`;
    if (result.upToDate) {
      io.out(`functions generate: up to date (${summary})`);
      return 0;
    }
    if (check) {
      io.err(
        `functions generate: ${changed.length} generated files differ from what would be written; ` +
          "run `sluice functions generate`",
      );
      return 1;
    }
    io.out(`functions generate: wrote ${changed.length} changes (${summary})`);
    return 0;
  } catch (error) {
    // A configuration or flows-module problem deserves one clear line, not a stack trace.
    if (
      error instanceof CodegenError || error instanceof QueueNameError ||
      error instanceof UnsafePathError
    ) {
      io.err(error.message);
      const traced = error.cause instanceof Error ? error.cause : error;
      if (debugRequested() && traced.stack !== undefined) io.err(traced.stack);
      return 1;
    }
    throw error;
  }
}
