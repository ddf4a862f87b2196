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
