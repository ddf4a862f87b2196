/**
 * The `sluice` command line (`deno run -A jsr:@sluice/sluice/cli <command>`): project setup
 * (`install`, `migrate`, `functions generate`), the development loop (`dev`, `flows reset`) and
 * every operator command of docs/ops.md.
 *
 * @module
 */
import { main as generateMain } from "../codegen/cli.ts";
import { CodegenError } from "../codegen/errors.ts";
import { QueueNameError } from "../dsl/errors.ts";
import { main as opsMain } from "../ops/cli.ts";
import { devCommand } from "./dev.ts";
import { install, NotASupabaseProjectError } from "./install.ts";
import { migrateCommand } from "./migrate.ts";
import type { CliIo } from "./_io.ts";

export type { CliIo } from "./_io.ts";

const HELP = `Usage: sluice <command> [arguments]

sluice is \`deno run -A jsr:@sluice/sluice/cli\` (\`deno task sluice\` after install).

Project:
  install                         set sluice up in the Supabase project in this directory
  migrate                         apply sluice's migrations to DATABASE_URL
  functions generate [--check]    write one Edge Function per worker function of the flows module
Development:
  dev [--config <deno.json>]      run every worker function here against DATABASE_URL
  flows reset <flow_slug>         delete a flow's definition and data (development only)
Operations (DATABASE_URL; \`sluice ops --help\` lists them, docs/ops.md describes them):
  coverage, queues, functions, runs, run, fence ..., aliases ..., version-drain,
  clear-pause, prune

Exit codes: 0 done, 1 failed, 2 bad usage.`;

/** Options of {@linkcode main}. */
export interface SluiceCliOptions {
  /**
   * The project directory.
   *
   * @default {Deno.cwd()}
   */
  readonly cwd?: string;
  /**
   * The database.
   *
   * @default {Deno.env.get("DATABASE_URL")}
   */
  readonly databaseUrl?: string;
  /**
   * Stops `dev`.
   *
   * @default {aborted on SIGINT or SIGTERM}
   */
  readonly signal?: AbortSignal;
  /**
   * Where to print.
   *
   * @default {console.log and console.error}
   */
  readonly io?: CliIo;
}

function stopSignal(): AbortSignal {
  const controller = new AbortController();
  const stop = () => controller.abort();
  for (const name of ["SIGINT", "SIGTERM"] as const) Deno.addSignalListener(name, stop);
  return controller.signal;
}

/**
 * Runs one `sluice` command.
 *
 * @param args The arguments after `sluice`.
 * @param options The project directory, database, stop signal and output.
 * @returns The exit code.
 *
 * @example Usage
 * ```ts ignore
 * import { main } from "./main.ts";
 *
 * Deno.exit(await main(["migrate"]));
 * ```
 */
export async function main(
  args: readonly string[],
  options: SluiceCliOptions = {},
): Promise<number> {
  const io = options.io ?? { out: console.log, err: console.error };
  const cwd = options.cwd ?? Deno.cwd();
  const databaseUrl = options.databaseUrl ?? Deno.env.get("DATABASE_URL");
  const [command, ...rest] = args;
  if (command === undefined || command === "-h" || command === "--help" || command === "help") {
    (command === undefined ? io.err : io.out)(HELP);
    return command === undefined ? 2 : 0;
  }
  if (command === "install" || command === "migrate") {
    if (rest.length > 0) {
      io.err(`Cannot run ${command}: unexpected argument ${JSON.stringify(rest[0])}\n\n${HELP}`);
      return 2;
    }
    if (command === "migrate") return await migrateCommand(databaseUrl, cwd, io);
    try {
      await install(cwd, io);
      return 0;
    } catch (error) {
      if (!(error instanceof NotASupabaseProjectError)) throw error;
      io.err(error.message);
      return 1;
    }
  }
  if (command === "functions" && rest[0] === "generate") {
    return await generateMain(rest.slice(1), io);
  }
  if (command === "dev") {
    const configAt = rest.indexOf("--config");
    const configPath = configAt === -1 ? "./deno.json" : rest[configAt + 1];
    const unexpected = rest.filter((_, i) => i !== configAt && i !== configAt + 1);
    if (configPath === undefined || unexpected.length > 0) {
      io.err(`Cannot run dev: expected [--config <deno.json>], got ${rest.join(" ")}\n\n${HELP}`);
      return 2;
    }
    try {
      return await devCommand({
        databaseUrl,
        configPath,
        signal: options.signal ?? stopSignal(),
        io,
      });
    } catch (error) {
      if (!(error instanceof CodegenError || error instanceof QueueNameError)) throw error;
      io.err(error.message);
      return 1;
    }
  }
  const opsArgs = command === "ops" ? rest : args;
  return await opsMain(opsArgs, { databaseUrl, io, program: "sluice" });
}
