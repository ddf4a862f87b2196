/**
 * The `sluice` command line (`deno run -A jsr:@sluice/sluice/cli <command>`): project setup
 * (`install`, `migrate`, `functions generate`), the development loop (`dev`, `flows reset`) and
 * every operator command of docs/ops.md, dispatched through the one registry of registry.ts.
 *
 * @module
 */
import { debugRequested } from "./debug_requested.ts";
import { runOpsCommand } from "./commands/run_ops_command.ts";
import { type CliIo, terminalSafeIo } from "./commands/command_types.ts";
import { type CliCommand, type CommandSection, isOpsCommand } from "./command.ts";
import { closestCommand, findCommand, parseArgs } from "./parse_args.ts";
import { OPS_SECTIONS, SECTIONS } from "./registry.ts";
import { commandHelp, help, PROGRAM } from "./usage.ts";

export type { CliIo } from "./commands/command_types.ts";

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
   * Where to print. Every line reaches it with its control characters escaped
   * (`escapeControlCharacters`): stored reasons and errors cannot drive a terminal.
   *
   * @default {console.log and console.error}
   */
  readonly io?: CliIo;
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
  const io = terminalSafeIo(options.io ?? { out: console.log, err: console.error });
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

/** How error messages name a command: the ops commands as `ops <name>`, as they always have. */
function label(command: CliCommand): string {
  return isOpsCommand(command) ? `ops ${command.name}` : command.name;
}

/**
 * The one line for arguments that name no command: the group's verbs when the first word is a
 * group (`fence`), and the closest name when one is a typo away.
 */
function noSuchCommand(program: string, commands: readonly CliCommand[], words: readonly string[]) {
  const group = commands.filter((command) => command.name.startsWith(`${words[0]} `));
  const verbs = group.map((command) => command.name).join(", ");
  if (group.length > 0 && (words.length === 1 || words[1].startsWith("-"))) {
    return `Cannot run ${program} ${JSON.stringify(words[0])}: give one of ${verbs}`;
  }
  const typed = JSON.stringify(words.slice(0, group.length > 0 ? 2 : 1).join(" "));
  const closest = closestCommand(commands, words);
  const hint = closest !== undefined
    ? `did you mean ${JSON.stringify(closest.name)}?`
    : group.length > 0
    ? `give one of ${verbs}`
    : `\`${program} --help\` lists every command`;
  return `Cannot run ${program} ${typed}: no such command; ${hint}`;
}

async function run(
  args: readonly string[],
  options: SluiceCliOptions,
  io: CliIo,
): Promise<number> {
  const databaseUrl = options.databaseUrl ?? Deno.env.get("DATABASE_URL");
  // `sluice ops <command>` (`deno task ops`) names the commands that work on the database.
  const scoped = args[0] === "ops";
  const sections: readonly CommandSection[] = scoped ? OPS_SECTIONS : SECTIONS;
  const program = scoped ? `${PROGRAM} ops` : PROGRAM;
  const words = scoped ? args.slice(1) : args;
  const [name] = words;
  if (name === undefined || name === "-h" || name === "--help" || name === "help") {
    (name === undefined ? io.err : io.out)(help(sections, program));
    return name === undefined ? 2 : 0;
  }
  const commands = sections.flatMap((section) => section.commands);
  const command = findCommand(commands, words);
  if (command === undefined) {
    io.err(noSuchCommand(program, commands, words));
    return 2;
  }
  const rest = words.slice(command.name.split(" ").length);
  if (rest.includes("-h") || rest.includes("--help")) {
    io.out(commandHelp(command));
    return 0;
  }
  const parsed = parseArgs(command, rest);
  if (typeof parsed === "string") {
    io.err(`Cannot run ${label(command)}: ${parsed}\n\n${commandHelp(command)}`);
    return 2;
  }
  if (isOpsCommand(command)) return await runOpsCommand(command, parsed, { databaseUrl, io });
  return await command.run(parsed, {
    cwd: options.cwd ?? Deno.cwd(),
    databaseUrl,
    signal: options.signal,
    io,
  });
}
