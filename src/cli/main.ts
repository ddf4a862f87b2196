/**
 * The `sluice` command line (`deno run -A jsr:@sluice/sluice/cli <command>`): project setup
 * (`install`, `migrate`, `functions generate`), the development loop (`dev`, `flows reset`) and
 * every operator command of docs/ops.md.
 *
 * @module
 */
import { main as generateMain } from "../codegen/cli.ts";
import { debugRequested } from "../codegen/_util.ts";
import { main as opsMain } from "../ops/cli.ts";
import { devCommand } from "./dev.ts";
import { install } from "./install.ts";
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

Exit codes: 0 done, 1 failed (one line saying why; SLUICE_DEBUG=1 adds the stack trace),
2 bad usage.`;

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
  try {
    return await run(args, options, io);
  } catch (error) {
    // Whatever a command did not expect still deserves one line, not a stack trace; the trace is
    // there for whoever asks (SLUICE_DEBUG=1).
    const [command] = args;
    io.err(oneLine(command, error));
    if (debugRequested()) {
      for (let cause = error; cause instanceof Error; cause = cause.cause) {
        io.err(cause.stack ?? String(cause));
      }
    }
    return 1;
  }
}

/** `error` as one line: its message when it already reads "Cannot ...", else prefixed. */
function oneLine(command: string | undefined, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const text = /^Cannot /.test(message)
    ? message
    : `Cannot run sluice ${command ?? ""}: ${
      error instanceof Error && error.name !== "Error" ? `${error.name}: ` : ""
    }${message}`;
  return debugRequested()
    ? text
    : `${text.split("\n")[0]}${text.includes("\n") ? " (SLUICE_DEBUG=1 shows more)" : ""}`;
}

async function run(
  args: readonly string[],
  options: SluiceCliOptions,
  io: CliIo,
): Promise<number> {
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
    await install(cwd, io);
    return 0;
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
    return await devCommand({
      databaseUrl,
      configPath,
      signal: options.signal ?? stopSignal(),
      io,
    });
  }
  const opsArgs = command === "ops" ? rest : args;
  return await opsMain(opsArgs, { databaseUrl, io, program: "sluice" });
}
