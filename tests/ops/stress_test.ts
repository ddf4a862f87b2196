import assert from "node:assert/strict";
import { failedTests, parseStressArgs, StressArgsError } from "../../scripts/stress.ts";

Deno.test("test:stress reads its runs, burners and paths, and names a bad value", () => {
  assert.deepEqual(parseStressArgs(["tests/worker/waits_crash_test.ts"]), {
    runs: 20,
    burners: 2,
    paths: ["tests/worker/waits_crash_test.ts"],
  });
  assert.deepEqual(parseStressArgs(["--runs", "3", "--burners", "0", "a_test.ts", "b/"]), {
    runs: 3,
    burners: 0,
    paths: ["a_test.ts", "b/"],
  });
  assert.throws(
    () => parseStressArgs(["--runs", "0", "a_test.ts"]),
    (error: Error) => error instanceof StressArgsError && error.message.includes('"0"'),
  );
  assert.throws(() => parseStressArgs(["--burners", "two", "a_test.ts"]), StressArgsError);
  assert.throws(() => parseStressArgs([]), /name the test files/);
});

Deno.test("test:stress names the failed tests of a run from deno test's ERRORS section", () => {
  const output = [
    "ERRORS",
    "",
    "a restart loses nothing => ./tests/worker/waits_crash_test.ts:22:6",
    "error: AssertionError: Timed out",
    "",
    "FAILURES",
    "",
    "a restart loses nothing => ./tests/worker/waits_crash_test.ts:22:6",
  ].join("\n");
  assert.deepEqual(failedTests(output), [
    "a restart loses nothing (tests/worker/waits_crash_test.ts:22:6)",
  ]);
  assert.deepEqual(failedTests("ok | 3 passed | 0 failed (1s)\n"), []);
});

Deno.test("test:stress fails on a test that fails once in two runs, and names it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sluice_stress_" });
  try {
    // Fails on every second run: the count of runs is kept in a file beside it.
    await Deno.writeTextFile(
      `${dir}/flaky_test.ts`,
      [
        `const counter = ${JSON.stringify(`${dir}/runs`)};`,
        "const runs = Number(await Deno.readTextFile(counter).catch(() => '0')) + 1;",
        "await Deno.writeTextFile(counter, String(runs));",
        'Deno.test("flips a coin", () => { if (runs % 2 === 0) throw new Error("tails"); });',
      ].join("\n"),
    );
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["task", "test:stress", "--runs", "2", "--burners", "1", `${dir}/flaky_test.ts`],
      cwd: new URL("../../", import.meta.url),
      stdout: "piped",
      stderr: "piped",
      env: { SLUICE_TEST_PGMQ: "compat" },
    }).output();
    const stdout = new TextDecoder().decode(output.stdout);
    assert.equal(output.code, 1, stdout);
    assert.match(stdout, /^1 of 2 runs passed beside 1 CPU burners; load average/m);
    assert.match(stdout, /\| flips a coin \(.*flaky_test\.ts:4:\d+\) \| 1 \|/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
