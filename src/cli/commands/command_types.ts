// What every command of the `sluice` command line declares, and the helpers the ops commands share.

import type { Sql } from "../../db/driver/postgres.ts";

/**
 * Where a command of the `sluice` command line prints, one line per call: replaceable in tests.
 * Every command (project, development and ops) takes this one shape.
 */
export interface CliIo {
  /** Receives normal output (stdout). */
  readonly out: (line: string) => void;
  /** Receives errors and usage (stderr). */
  readonly err: (line: string) => void;
}

/**
 * `text` with every character a terminal would act on written as a `\uXXXX` escape: the C0
 * controls but tab and newline, DEL and the C1 controls (`\x1b` becomes `\u001b`). What the CLI
 * prints includes stored text anyone with write access to sluice's tables chose (cancel reasons,
 * handler errors, schedule errors), and an escape sequence in it would otherwise drive the
 * operator's terminal: clear the screen, retitle the window, write the clipboard (OSC 52).
 *
 * @example
 * ```ts
 * import { escapeControlCharacters } from "./command_types.ts";
 * console.log(escapeControlCharacters("a\x1b[2Jb")); // a\u001b[2Jb
 * ```
 */
export function escapeControlCharacters(text: string): string {
  let escaped = "";
  for (const character of text) {
    const code = character.charCodeAt(0);
    const control = (code < 0x20 && character !== "\n" && character !== "\t") ||
      (code >= 0x7f && code <= 0x9f);
    escaped += control ? `\\u${code.toString(16).padStart(4, "0")}` : character;
  }
  return escaped;
}

/**
 * `io` with every line passed through {@linkcode escapeControlCharacters} on its way out: the one
 * place the CLI's output is made safe for a terminal, whichever command prints it.
 */
export function terminalSafeIo(io: CliIo): CliIo {
  return {
    out: (line) => io.out(escapeControlCharacters(line)),
    err: (line) => io.err(escapeControlCharacters(line)),
  };
}

/** The name the ops commands use for {@linkcode CliIo}. */
export type OpsIo = CliIo;

/** The parsed arguments of one command invocation. */
export interface CommandArgs {
  /** Positional arguments, as many as the command declares (or more, for a variadic one). */
  readonly positional: readonly string[];
  /** Whether `--json` was given (only for commands that accept it). */
  readonly json: boolean;
  /**
   * The options given, by name without dashes: the value of an option that takes one, `true`
   * for a flag.
   */
  readonly options: Readonly<Record<string, string | true>>;
}

/** An option a command accepts besides `--json`. */
export interface OptionSpec {
  /** The name without dashes, e.g. `manifest` for `--manifest`. */
  readonly name: string;
  /** What the value is, e.g. `FILE`; absent for a flag that takes no value. */
  readonly value?: string;
  /** One line for `--help`. */
  readonly summary: string;
}

/** What the command registry knows of a command: its name, its arguments and its help. */
export interface CommandSpec {
  /** The name typed after `sluice`: one word, or a group and a verb (`fence drain`). */
  readonly name: string;
  /** The names of its positional arguments, e.g. `["function_name"]`. */
  readonly positional: readonly string[];
  /** Whether the last positional argument takes one or more values (`NAME...`). */
  readonly variadic?: boolean;
  /** The options it accepts besides `--json`. */
  readonly options?: readonly OptionSpec[];
  /** Whether it accepts `--json`. */
  readonly json: boolean;
  /** One line for the command list. */
  readonly summary: string;
  /** What `<command> --help` prints below the usage line. */
  readonly description: string;
}

/** One ops command: it runs on a connection to the sluice database the CLI opens for it. */
export interface OpsCommand extends CommandSpec {
  /**
   * Connections its database client may open: a long-running command serving several requests
   * at once wants more than one.
   *
   * @default {1}
   */
  readonly connections?: number;
  /** Runs the command; returns the exit code. */
  run(sql: Sql, args: CommandArgs, io: OpsIo): Promise<number>;
}

/** Column alignment of {@linkcode formatTable}. */
export type Align = "left" | "right";

/**
 * Lays rows out in columns under an upper-case header, two spaces apart, numbers right-aligned;
 * no trailing spaces.
 */
export function formatTable(
  headers: readonly string[],
  rows: readonly (readonly string[])[],
  align: readonly Align[],
): string[] {
  const widths = headers.map((header, i) =>
    Math.max(header.length, ...rows.map((row) => row[i].length))
  );
  const line = (cells: readonly string[]) =>
    cells.map((cell, i) => align[i] === "right" ? cell.padStart(widths[i]) : cell.padEnd(widths[i]))
      .join("  ").trimEnd();
  return [line(headers), ...rows.map(line)];
}

/** How {@linkcode printListing} shows rows that are not empty and not asked for as JSON. */
export interface Listing<Row> {
  /** The line printed when there are no rows. */
  readonly empty: string;
  /** Column headers. */
  readonly headers: readonly string[];
  /** The cells of one row, one per header. */
  readonly cells: (row: Row) => readonly string[];
  /** Alignment per column. */
  readonly align: readonly Align[];
}

/**
 * Prints a listing command's rows: as JSON with `--json`, else as a table, or the listing's
 * `empty` line when there are none. Returns whether it printed a table (a command may add a
 * summary under it).
 */
export function printListing<Row extends object>(
  io: OpsIo,
  args: CommandArgs,
  rows: readonly Row[],
  listing: Listing<Row>,
): boolean {
  if (args.json) {
    printJson(io, rows);
    return false;
  }
  if (rows.length === 0) {
    io.out(listing.empty);
    return false;
  }
  for (const line of formatTable(listing.headers, rows.map(listing.cells), listing.align)) {
    io.out(line);
  }
  return true;
}

/** Prints rows as pretty JSON (`--json`): timestamps as ISO strings. */
export function printJson(io: OpsIo, rows: readonly object[]): void {
  io.out(JSON.stringify(rows, null, 2));
}

/** A value and a unit of {@linkcode parseDuration}. */
const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/;

/**
 * Reads a duration option such as `90`, `90s`, `5m`, `1h` or `500ms` as milliseconds.
 *
 * @throws {RangeError} When the value is not such a duration; the message names it.
 */
export function parseDuration(option: string, value: string): number {
  const match = DURATION.exec(value);
  if (match === null) {
    throw new RangeError(
      `--${option} must be a duration such as 90s, 5m or 1h, got ${JSON.stringify(value)}`,
    );
  }
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[match[2] ?? "s"] ?? 1000;
  return Number(match[1]) * unit;
}

/** The value of a string option, or `fallback` when absent. */
export function optionString(args: CommandArgs, name: string, fallback: string): string;
/** The value of a string option, or `undefined` when absent. */
export function optionString(args: CommandArgs, name: string): string | undefined;
export function optionString(
  args: CommandArgs,
  name: string,
  fallback?: string,
): string | undefined {
  const value = args.options[name];
  return typeof value === "string" ? value : fallback;
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A message's first line, for a table cell: a handler's error carries its stack trace below. */
export function firstLine(text: string): string {
  return text.split("\n", 1)[0];
}
