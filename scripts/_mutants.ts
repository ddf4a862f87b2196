/**
 * The pure parts of the mutation audit (scripts/mutants.ts): applying a mutant to a source text,
 * checking it is a one-line change, reading the command line, and the report table.
 *
 * @module
 */

import type { Mutant } from "../tests/mutants/mutants.ts";

/** A mutant whose search text is not found exactly once in its file: the list is stale. */
export class StaleMutantError extends Error {
  override readonly name = "StaleMutantError";
  /** The mutant. */
  readonly mutantId: string;
  /** Its file. */
  readonly file: string;
  /** How many times its search text occurs there. */
  readonly occurrences: number;

  /**
   * @param mutantId The mutant.
   * @param file Its file.
   * @param occurrences How many times its search text occurs there.
   */
  constructor(mutantId: string, file: string, occurrences: number) {
    super(
      `Cannot apply mutant "${mutantId}": its search text is found ${occurrences} times in ` +
        `${file}, not once; update tests/mutants/mutants.ts to the live source`,
    );
    this.mutantId = mutantId;
    this.file = file;
    this.occurrences = occurrences;
  }
}

/** Counts the non-overlapping occurrences of `search` in `text`. */
function occurrences(text: string, search: string): number {
  if (search === "") return 0;
  return text.split(search).length - 1;
}

/**
 * Returns `source` with the mutant applied.
 *
 * @throws {StaleMutantError} When its search text is not found exactly once.
 */
export function applyMutant(mutant: Mutant, source: string): string {
  const found = occurrences(source, mutant.search);
  if (found !== 1) throw new StaleMutantError(mutant.id, mutant.file, found);
  return source.replace(mutant.search, () => mutant.replace);
}

/** How many lines `replace` changes in `search` (`-1` when their line counts differ). */
export function changedLines(search: string, replace: string): number {
  const before = search.split("\n");
  const after = replace.split("\n");
  if (before.length !== after.length) return -1;
  return before.filter((line, index) => line !== after[index]).length;
}

/** The PGMQ modes a mutant runs in (scripts/test.ts `SLUICE_TEST_PGMQ`). */
export type MutantMode = "compat" | "extension";

/** The command line of `deno task test:mutants`. */
export interface MutantArgs {
  /** The mutant ids `--only` names; `null` for every mutant. */
  readonly only: readonly string[] | null;
  /** The modes `--mode` names; `null` for the default (compat, and extension when available). */
  readonly modes: readonly MutantMode[] | null;
}

/** A command line `deno task test:mutants` does not accept. */
export class MutantArgsError extends Error {
  override readonly name = "MutantArgsError";
  /** The offending argument. */
  readonly argument: string;

  /**
   * @param argument The offending argument.
   * @param message What is wrong with it.
   */
  constructor(argument: string, message: string) {
    super(message);
    this.argument = argument;
  }
}

const USAGE = "usage: deno task test:mutants [--only id,id] [--mode compat|extension|both]";

/**
 * Reads `--only id,id` and `--mode compat|extension|both` (also as `--only=…`, `--mode=…`).
 *
 * @throws {MutantArgsError} For anything else, or an unknown id.
 */
export function parseMutantArgs(args: readonly string[], known: readonly string[]): MutantArgs {
  let only: string[] | null = null;
  let modes: MutantMode[] | null = null;
  for (let index = 0; index < args.length; index++) {
    const [flag, inline] = args[index].split(/=(.*)/s, 2);
    if (flag !== "--only" && flag !== "--mode") {
      throw new MutantArgsError(args[index], `Unknown argument ${args[index]}; ${USAGE}`);
    }
    const value = inline ?? args[++index];
    if (value === undefined || value === "") {
      throw new MutantArgsError(flag, `${flag} needs a value; ${USAGE}`);
    }
    if (flag === "--only") {
      only = value.split(",").map((id) => id.trim()).filter((id) => id !== "");
      const unknown = only.filter((id) => !known.includes(id));
      if (unknown.length > 0) {
        throw new MutantArgsError(
          value,
          `Unknown mutant ${unknown.join(", ")}; the mutants are: ${known.join(", ")}`,
        );
      }
    } else if (value === "both") {
      modes = ["compat", "extension"];
    } else if (value === "compat" || value === "extension") {
      modes = [value];
    } else {
      throw new MutantArgsError(value, `--mode must be compat, extension or both, got ${value}`);
    }
  }
  return { only, modes };
}

/** One mutant's run in one mode. */
export interface MutantOutcome {
  readonly id: string;
  readonly mode: MutantMode;
  /** `killed`: a guard failed; `survived`: all passed; `error`: no test result (see the log). */
  readonly result: "killed" | "survived" | "error";
  readonly seconds: number;
}

/** The report: one row per mutant and mode, as a Markdown table. */
export function formatMutantTable(outcomes: readonly MutantOutcome[]): string {
  const rows = [
    ["mutant", "mode", "result", "seconds"],
    ...outcomes.map((o) => [o.id, o.mode, o.result, String(o.seconds)]),
  ];
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  const line = (row: string[]) =>
    `| ${row.map((cell, column) => cell.padEnd(widths[column])).join(" | ")} |`;
  return [
    line(rows[0]),
    `| ${widths.map((width) => "-".repeat(width)).join(" | ")} |`,
    ...rows.slice(1).map(line),
  ].join("\n");
}
