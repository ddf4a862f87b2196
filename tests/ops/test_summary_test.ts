import assert from "node:assert/strict";
import {
  addTestSummary,
  formatTestSummary,
  parseTestSummary,
} from "../../scripts/_test_summary.ts";

Deno.test("the test runner counts tests from deno test's last summary line", () => {
  const output = [
    "running 2 tests from ./tests/a_test.ts",
    "\x1b[0m\x1b[32mok\x1b[0m | 12 passed (3 steps) | 0 failed | 1 ignored \x1b[0m\x1b[38;5;245m(2s)\x1b[0m",
  ].join("\n");
  assert.deepEqual(parseTestSummary(output), { passed: 12, failed: 0, ignored: 1 });
  assert.deepEqual(
    parseTestSummary("FAILED | 10 passed | 2 failed (1 step) | 4 filtered out (1s)\n"),
    { passed: 10, failed: 2, ignored: 0 },
  );
  assert.equal(parseTestSummary("error: Module not found\n"), undefined);
});

Deno.test("the test runner's final line mentions skipped tests only when there are some", () => {
  assert.equal(formatTestSummary({ passed: 3, failed: 1, ignored: 0 }), "3 passed, 1 failed");
  assert.equal(
    formatTestSummary({ passed: 3, failed: 0, ignored: 2 }),
    "3 passed, 0 failed, 2 skipped",
  );
});

Deno.test("the test runner sums the summaries of its PGMQ modes", () => {
  const total = { passed: 0, failed: 0, ignored: 0 };
  addTestSummary(total, { passed: 300, failed: 0, ignored: 2 });
  addTestSummary(total, { passed: 298, failed: 1, ignored: 4 });
  assert.deepEqual(total, { passed: 598, failed: 1, ignored: 6 });
});
