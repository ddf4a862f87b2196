import assert from "node:assert/strict";
import {
  addFileDurations,
  addTestSummary,
  failureReport,
  formatTestSummary,
  parseTestSummary,
  slowestFiles,
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

Deno.test("the test runner repeats each failed test's name and error from deno test's output", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sluice_failure_report_" });
  try {
    await Deno.writeTextFile(
      `${dir}/sample_test.ts`,
      [
        'Deno.test("first fails", () => { throw new Error("boom in the first"); });',
        'Deno.test("passes", () => {});',
        'Deno.test("second fails", () => { throw new Error("bang in the second"); });',
      ].join("\n"),
    );
    const { stdout } = await new Deno.Command(Deno.execPath(), {
      args: ["test", "--no-check", "sample_test.ts"],
      cwd: dir,
      stdout: "piped",
      stderr: "null",
    }).output();
    const output = new TextDecoder().decode(stdout);
    const report = failureReport(output);
    for (
      const expected of ["first fails", "boom in the first", "second fails", "bang in the second"]
    ) {
      assert.ok(report.includes(expected), `${expected} in:\n${report}`);
    }
    assert.ok(!report.includes("passes =>"), report);
    assert.ok(!report.includes("\x1b["), "colours are removed");
    const cut = failureReport(output, 2);
    assert.equal(cut.split("\n").length, 3);
    assert.match(cut, /more lines in the ERRORS section above$/);
    assert.equal(failureReport(output.replace(/ERRORS[\s\S]*$/, "")), "");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the test runner sums each file's test durations, from a parallel and a serial run", () => {
  const total = new Map<string, number>();
  addFileDurations(
    total,
    [
      "\x1b[0m\x1b[38;5;245m./tests/a_test.ts => \x1b[0mfirst ... \x1b[0m\x1b[32mok\x1b[0m \x1b[0m\x1b[38;5;245m(213ms)\x1b[0m",
      "./tests/b_test.ts => a slow one ... FAILED (1m5s)",
      "./tests/a_test.ts => second ... ok (2s)",
      "./tests/a_test.ts => ignored one ... ignored (0ms)",
      "./tests/b_test.ts => with steps ... a step ... ok (30s)",
    ].join("\n"),
  );
  addFileDurations(
    total,
    [
      "running 2 tests from ./tests/c_test.ts",
      "with steps ...",
      "  a step ... ok (4s)",
      "with steps ... ok (5s)",
      "plain ... ok (500ms)",
      "running 1 test from ./tests/a_test.ts",
      "third ... ok (1s)",
    ].join("\n"),
  );
  assert.deepEqual(Object.fromEntries(total), {
    "tests/a_test.ts": 3_213,
    "tests/b_test.ts": 65_000,
    "tests/c_test.ts": 5_500,
  });
  assert.deepEqual(slowestFiles(total, 2), [
    "   65.0 s  tests/b_test.ts",
    "    5.5 s  tests/c_test.ts",
  ]);
});
