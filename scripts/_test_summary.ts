/** Counts from the summary line `deno test` prints last. */
export interface TestSummary {
  /** Tests (not steps) that passed. */
  passed: number;
  /** Tests (not steps) that failed. */
  failed: number;
  /** Tests that were ignored. */
  ignored: number;
}

// e.g. "ok | 12 passed (3 steps) | 0 failed | 1 ignored (2s)"
//      "FAILED | 10 passed | 2 failed (1 step) | 4 filtered out (1s)"
const SUMMARY =
  /^(?:ok|FAILED) \| (\d+) passed(?: \(\d+ steps?\))? \| (\d+) failed(?: \(\d+ steps?\))?(?: \| (\d+) ignored(?: \(\d+ steps?\))?)?/;

/**
 * Finds the last summary line of `deno test` output (ANSI colours allowed) and returns its counts,
 * or `undefined` when there is none (e.g. type-checking failed before any test ran).
 */
export function parseTestSummary(output: string): TestSummary | undefined {
  // deno-lint-ignore no-control-regex
  const plain = output.replace(/\x1b\[[0-9;]*m/g, "");
  let summary: TestSummary | undefined;
  for (const line of plain.split("\n")) {
    const match = SUMMARY.exec(line.trim());
    if (match !== null) {
      summary = {
        passed: Number(match[1]),
        failed: Number(match[2]),
        ignored: Number(match[3] ?? 0),
      };
    }
  }
  return summary;
}

/** The runner's final line: `N passed, N failed`, plus `, N skipped` when tests were ignored. */
export function formatTestSummary(summary: TestSummary): string {
  const skipped = summary.ignored > 0 ? `, ${summary.ignored} skipped` : "";
  return `${summary.passed} passed, ${summary.failed} failed${skipped}`;
}

/** Adds the counts of `summary` to `total` (e.g. one suite run per PGMQ flavour). */
export function addTestSummary(total: TestSummary, summary: TestSummary): void {
  total.passed += summary.passed;
  total.failed += summary.failed;
  total.ignored += summary.ignored;
}

/** At most this many lines of one run's `ERRORS` section are repeated at the end of the run. */
export const MAX_FAILURE_LINES = 80;

/**
 * The `ERRORS` section of `deno test` output (each failed test's name, file and error), without
 * colours and cut to `maxLines`, or `""` when nothing failed. The runner repeats it after the
 * last mode, so the tail of a long CI log names what failed in an earlier mode.
 */
export function failureReport(output: string, maxLines = MAX_FAILURE_LINES): string {
  // deno-lint-ignore no-control-regex
  const lines = output.replace(/\x1b\[[0-9;]*m/g, "").split("\n");
  const start = lines.findIndex((line) => line.trim() === "ERRORS");
  if (start === -1) return "";
  let end = lines.findIndex((line, index) => index > start && line.trim() === "FAILURES");
  if (end === -1) end = lines.length;
  const section = lines.slice(start + 1, end).filter((line, index, all) =>
    line.trim() !== "" || (index > 0 && all[index - 1].trim() !== "")
  );
  while (section.length > 0 && section[section.length - 1].trim() === "") section.pop();
  if (section.length <= maxLines) return section.join("\n");
  return [
    ...section.slice(0, maxLines),
    `… ${section.length - maxLines} more lines in the ERRORS section above`,
  ].join("\n");
}

// In a --parallel run each line names its file: "./tests/a_test.ts => a name ... ok (1s)"; in a
// serial one a header does: "running 3 tests from ./tests/a_test.ts", then "a name ... ok (1s)".
// Steps count within their test: indented in a serial run, "test ... step ... ok" in a parallel one.
const TEST_LINE =
  /^(?:\.\/(\S+_test\.ts) => )?(?!.* \.\.\. .* \.\.\. )\S.* \.\.\. (?:ok|FAILED|ignored)[^(]*\(([^)]+)\)$/;
const FILE_HEADER = /^running \d+ tests? from \.\/(\S+_test\.ts)$/;

/** Milliseconds of a `deno test` duration: `213ms`, `1s`, `2m5s`. */
function durationMs(text: string): number {
  let ms = 0;
  for (const [, amount, unit] of text.matchAll(/(\d+)(ms|s|m|h)/g)) {
    ms += Number(amount) * { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[unit as "ms"];
  }
  return ms;
}

/**
 * Adds each test file's time in `output` (the sum of its tests' durations as `deno test` prints
 * them, parallel or serial) to `total`, by file.
 */
export function addFileDurations(total: Map<string, number>, output: string): void {
  let current: string | undefined;
  // deno-lint-ignore no-control-regex
  for (const line of output.replace(/\x1b\[[0-9;]*m/g, "").split("\n")) {
    const header = FILE_HEADER.exec(line.trimEnd());
    if (header !== null) current = header[1];
    const match = TEST_LINE.exec(line.trimEnd());
    const file = match?.[1] ?? current;
    if (match === null || file === undefined) continue;
    total.set(file, (total.get(file) ?? 0) + durationMs(match[2]));
  }
}

/** The `count` files with the most time, slowest first, as `  12.3 s  tests/x_test.ts` lines. */
export function slowestFiles(total: Map<string, number>, count = 10): string[] {
  return [...total].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, count)
    .map(([file, ms]) => `${(ms / 1000).toFixed(1).padStart(7)} s  ${file}`);
}
