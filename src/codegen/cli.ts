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
import { CodegenError } from "./errors.ts";
import { debugRequested } from "./_util.ts";
import { type FileStatus, generateFunctions } from "./generate.ts";
import { UnsafePathError } from "./project_files.ts";

const USAGE = `Usage: sluice functions generate [--check] [--config <path>]

Writes supabase/functions/<name>/{index.ts,deno.json} for every worker function of the flows
module ("sluice.flows" in deno.json, default ./supabase/functions/_shared/flows.ts), plus
sluice.manifest.json and sluice.config.toml (and the generated block of supabase/config.toml when
that file exists). Refuses a flows module or local import outside the directory holding supabase/.

Options:
  --check           write nothing; exit 1 when a generated file is missing, stale or extra
  --config <path>   the deno.json to read (default: ./deno.json)
  -h, --help        show this help`;

type Change = Exclude<FileStatus, "unchanged">;

const CHECK_LABEL: Record<Change, string> = { missing: "missing", stale: "stale", extra: "extra" };
const WRITE_LABEL: Record<Change, string> = {
  missing: "created",
  stale: "updated",
  extra: "removed",
};

/** Output streams, replaceable in tests. */
export interface CliIo {
  /** Receives normal output, one line per call. */
  readonly out: (line: string) => void;
  /** Receives errors and usage, one line per call. */
  readonly err: (line: string) => void;
}

/**
 * Runs the generator with command-line arguments.
 *
 * @param args The arguments after the task name.
 * @param io Where to print.
 * @returns The exit code: 0 done or up to date, 1 stale in check mode or failed, 2 bad usage.
 *
 * @example Usage
 * ```ts ignore
 * import { main } from "./cli.ts";
 *
 * Deno.exit(await main(["--check"]));
 * ```
 */
export async function main(
  args: readonly string[],
  io: CliIo = { out: console.log, err: console.error },
): Promise<number> {
  let check = false;
  let configPath: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "-h" || arg === "--help") {
      io.out(USAGE);
      return 0;
    } else if (arg === "--check") {
      check = true;
    } else if (arg === "--config") {
      configPath = args[++i];
      if (configPath === undefined) {
        io.err(`Cannot generate functions: --config needs a path\n\n${USAGE}`);
        return 2;
      }
    } else {
      io.err(`Cannot generate functions: unexpected argument ${JSON.stringify(arg)}\n\n${USAGE}`);
      return 2;
    }
  }

  try {
    const result = await generateFunctions({ configPath, check });
    const changed = result.files.filter((file) => file.status !== "unchanged");
    const labels = check ? CHECK_LABEL : WRITE_LABEL;
    for (const file of changed) {
      io.out(`${labels[file.status as Change].padEnd(7)} ${file.path}`);
    }
    const generated = result.files.filter((file) => file.status !== "extra").length;
    const summary = `${result.functions.length} worker functions, ${generated} files`;
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

if (import.meta.main) Deno.exit(await main(Deno.args));
