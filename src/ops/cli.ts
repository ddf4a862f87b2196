/**
 * The operator commands of `deno task sluice <command>`. Reads the monitoring views and calls the
 * maintenance functions of the database at `DATABASE_URL`.
 *
 * ```sh
 * DATABASE_URL=postgres://... deno task sluice coverage
 * deno task sluice ops --help
 * ```
 *
 * @module
 */

import { connect } from "../db/connect.ts";
import { isSluiceInstalled } from "../db/ops_queries.ts";
import {
  type CommandArgs,
  COMMANDS,
  type OpsCommand,
  type OpsIo,
  type OptionSpec,
  optionString,
} from "./commands/mod.ts";

function usageLine(command: OpsCommand, program: string): string {
  const positional = command.positional.map((name, i) =>
    command.variadic && i === command.positional.length - 1 ? ` <${name}>...` : ` <${name}>`
  ).join("");
  const options = (command.options ?? []).map((option) =>
    ` [--${option.name}${option.value === undefined ? "" : ` ${option.value}`}]`
  ).join("");
  return `${program} ${command.name}${positional}${options}${command.json ? " [--json]" : ""}`;
}

function help(program: string): string {
  const width = Math.max(...COMMANDS.map((command) => command.name.length));
  return [
    `Usage: ${program} <command> [arguments] [options] [--json]`,
    "",
    "Commands:",
    ...COMMANDS.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`),
    "",
    `Connects to the database at DATABASE_URL. \`${program} <command> --help\` describes one`,
    "command. Exit codes: 0 done, 1 failed, 2 bad usage or DATABASE_URL unset.",
  ].join("\n");
}

function commandHelp(command: OpsCommand, program: string): string {
  const options = command.options ?? [];
  const width = Math.max(0, ...options.map((option) => optionLabel(option).length));
  return [
    `Usage: ${usageLine(command, program)}`,
    "",
    command.description,
    ...(options.length === 0 ? [] : [
      "",
      "Options:",
      ...options.map((option) => `  ${optionLabel(option).padEnd(width)}  ${option.summary}`),
    ]),
  ].join("\n");
}

function optionLabel(option: OptionSpec): string {
  return `--${option.name}${option.value === undefined ? "" : ` ${option.value}`}`;
}

/** Options of {@linkcode main}. */
export interface OpsCliOptions {
  /**
   * The database to use.
   *
   * @default {Deno.env.get("DATABASE_URL")}
   */
  readonly databaseUrl?: string;
  /**
   * Where to print.
   *
   * @default {console.log and console.error}
   */
  readonly io?: OpsIo;
  /**
   * How usage and help name the program.
   *
   * @default {"deno task sluice"}
   */
  readonly program?: string;
}

/** Splits a command's arguments; returns an error message for anything it does not accept. */
function parseArgs(command: OpsCommand, args: readonly string[]): CommandArgs | string {
  const positional: string[] = [];
  const options: Record<string, string | true> = {};
  let json = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    // "-1 day" is an (invalid, negative) interval for the database to reject, not an option.
    if (arg === "--json" && command.json) {
      json = true;
      continue;
    }
    if (!/^--?[a-zA-Z]/.test(arg)) {
      positional.push(arg);
      continue;
    }
    const [name, inline] = arg.replace(/^--?/, "").split(/=(.*)/s, 2);
    const spec = command.options?.find((option) => option.name === name);
    if (spec === undefined || !arg.startsWith("--")) {
      return `unknown option ${JSON.stringify(arg)}`;
    }
    if (spec.value === undefined) {
      if (inline !== undefined) return `option --${name} takes no value`;
      options[name] = true;
    } else if (inline !== undefined) {
      options[name] = inline;
    } else if (i + 1 < args.length) {
      options[name] = args[++i];
    } else {
      return `option --${name} needs a value (${spec.value})`;
    }
  }
  const count = command.positional.length;
  if (command.variadic ? positional.length < count : positional.length !== count) {
    const wanted = command.positional.length === 0
      ? "no arguments"
      : command.positional.map((name) => `<${name}>`).join(" ");
    return `expected ${wanted}, got ${
      positional.length === 0 ? "none" : positional.map((arg) => JSON.stringify(arg)).join(" ")
    }`;
  }
  return { positional, json, options };
}

/** The command with the longest (one- or two-word) name the arguments start with. */
function findCommand(args: readonly string[]): OpsCommand | undefined {
  const words = (command: OpsCommand) => command.name.split(" ");
  return COMMANDS
    .filter((command) => words(command).every((word, i) => args[i] === word))
    .sort((a, b) => words(b).length - words(a).length)[0];
}

/**
 * Runs one ops command.
 *
 * @param args The arguments after `deno task sluice` (or `sluice ops`).
 * @param options The database URL and output streams.
 * @returns The exit code: 0 done, 1 failed, 2 bad usage or no database URL.
 *
 * @example Usage
 * ```ts ignore
 * import { main } from "./cli.ts";
 *
 * Deno.exit(await main(["coverage", "--json"]));
 * ```
 */
export async function main(
  args: readonly string[],
  options: OpsCliOptions = {},
): Promise<number> {
  const io = options.io ?? { out: console.log, err: console.error };
  const program = options.program ?? "deno task sluice";
  const [name] = args;
  if (name === undefined || name === "-h" || name === "--help" || name === "help") {
    (name === undefined ? io.err : io.out)(help(program));
    return name === undefined ? 2 : 0;
  }
  const command = findCommand(args);
  if (command === undefined) {
    const group = COMMANDS.filter((candidate) => candidate.name.startsWith(`${name} `));
    if (group.length > 0) {
      io.err(
        `Cannot run ops ${JSON.stringify(name)}: give one of ${
          group.map((candidate) => candidate.name).join(", ")
        }\n\n${group.map((candidate) => usageLine(candidate, program)).join("\n")}`,
      );
      return 2;
    }
    io.err(`Cannot run ops ${JSON.stringify(name)}: no such command\n\n${help(program)}`);
    return 2;
  }
  const rest = args.slice(command.name.split(" ").length);
  if (rest.includes("-h") || rest.includes("--help")) {
    io.out(commandHelp(command, program));
    return 0;
  }
  const parsed = parseArgs(command, rest);
  if (typeof parsed === "string") {
    io.err(`Cannot run ops ${command.name}: ${parsed}\n\n${commandHelp(command, program)}`);
    return 2;
  }
  // A command may take the database as an option (`dashboard --database-url`).
  const url = options.databaseUrl ?? optionString(parsed, "database-url") ??
    Deno.env.get("DATABASE_URL");
  if (url === undefined || url === "") {
    io.err(
      `Cannot run ops ${command.name}: DATABASE_URL is not set; set it to the sluice database, ` +
        "e.g. DATABASE_URL=postgres://postgres:postgres@127.0.0.1:54322/postgres",
    );
    return 2;
  }
  let sql: ReturnType<typeof connect> | undefined;
  try {
    sql = connect(url, { max: command.connections ?? 1, applicationName: "sluice-ops" });
    if (!(await isSluiceInstalled(sql))) {
      io.err(
        `Cannot run ops ${command.name}: sluice is not installed in this database (schema ` +
          "sluice missing); apply its migrations with `deno task sluice migrate` (or " +
          "`supabase migration up` after `deno task sluice install`)",
      );
      return 1;
    }
    return await command.run(sql, parsed, io);
  } catch (error) {
    // An unreachable server or a rejected argument deserves one clear line, not a stack trace.
    io.err(`Cannot run ops ${command.name}: ${error instanceof Error ? error.message : error}`);
    return 1;
  } finally {
    // Bounded: every statement has settled here, and postgres.js 3.4.9's end() has been seen to
    // wait forever on a connection the server showed idle; after 5 s it destroys the connection.
    await sql?.end({ timeout: 5 });
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
