// The command registry's entry: an ops command (src/cli/commands/) or a command that runs without
// a connection the CLI opens for it (install, migrate, functions generate, dev).

import type { CliIo, CommandArgs, CommandSpec, OpsCommand } from "./commands/command_types.ts";

/** What a {@linkcode LocalCommand} runs with. */
export interface CliContext {
  /** The project directory. */
  readonly cwd: string;
  /** The database, `undefined` or empty when none is set. */
  readonly databaseUrl: string | undefined;
  /** Stops a long-running command; `undefined` means SIGINT or SIGTERM does. */
  readonly signal: AbortSignal | undefined;
  /** Where to print. */
  readonly io: CliIo;
}

/** A command that works on the project, or opens its own connection. */
export interface LocalCommand extends CommandSpec {
  /** Tells it from an {@linkcode OpsCommand}, which the CLI connects for. */
  readonly local: true;
  /** Runs the command; returns the exit code. */
  run(args: CommandArgs, context: CliContext): Promise<number>;
}

/** One command of the registry. */
export type CliCommand = LocalCommand | OpsCommand;

/** A heading of `sluice --help` and the commands listed under it. */
export interface CommandSection {
  /** The heading, e.g. `Project`. */
  readonly title: string;
  /** Its commands, in the order `--help` lists them. */
  readonly commands: readonly CliCommand[];
}

/** Whether the CLI connects to the sluice database for `command`. */
export function isOpsCommand(command: CliCommand): command is OpsCommand {
  return !("local" in command);
}
