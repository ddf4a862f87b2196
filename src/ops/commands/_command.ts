// What every `deno task ops` command provides, and the small helpers they share.

import type { Sql } from "postgres";

/** Where a command prints: one line per call. */
export interface OpsIo {
  /** Normal output (stdout). */
  readonly out: (line: string) => void;
  /** Errors and usage (stderr). */
  readonly err: (line: string) => void;
}

/** The parsed arguments of one command invocation. */
export interface CommandArgs {
  /** Positional arguments, as many as the command declares. */
  readonly positional: readonly string[];
  /** Whether `--json` was given (only for commands that accept it). */
  readonly json: boolean;
}

/** One `deno task ops` command. */
export interface OpsCommand {
  /** The name typed after `deno task ops`. */
  readonly name: string;
  /** The names of its positional arguments, e.g. `["function_name"]`. */
  readonly positional: readonly string[];
  /** Whether it accepts `--json`. */
  readonly json: boolean;
  /** One line for the command list. */
  readonly summary: string;
  /** What `<command> --help` prints below the usage line. */
  readonly description: string;
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
export function printListing<Row extends Record<string, unknown>>(
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
export function printJson(io: OpsIo, rows: readonly Record<string, unknown>[]): void {
  io.out(JSON.stringify(rows, null, 2));
}

/** A timestamp for a table cell: ISO 8601 to the second, `-` when absent. */
export function formatTime(value: Date | null): string {
  return value === null ? "-" : value.toISOString().replace(/\.\d{3}Z$/, "Z");
}
