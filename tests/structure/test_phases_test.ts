import assert from "node:assert/strict";
import { testFiles } from "../../scripts/_embedded_subset.ts";
import { DISRUPTIONS, SERIAL_FILES, testPhases } from "../../scripts/_test_phases.ts";

const ROOT = new URL("../../", import.meta.url);

Deno.test("every test file that restarts a server, cuts connections or freezes a process runs in the serial phase, and only those", async () => {
  const disruptive: string[] = [];
  for (const file of await testFiles(ROOT, "tests/")) {
    const text = await Deno.readTextFile(new URL(file, ROOT));
    if (DISRUPTIONS.some((pattern) => pattern.test(text))) disruptive.push(file);
  }
  const listed = Object.keys(SERIAL_FILES).sort();
  assert.deepEqual(
    disruptive.filter((file) => !listed.includes(file)),
    [],
    "disruptive files missing from SERIAL_FILES in scripts/_test_phases.ts",
  );
  assert.deepEqual(
    listed.filter((file) => !disruptive.includes(file)),
    [],
    "SERIAL_FILES names files that disrupt nothing (or no longer exist)",
  );
});

Deno.test("the second PGMQ mode leaves out the server-independent files; the serial files are split off in both", async () => {
  const selected = [
    "tests/dsl/flow_test.ts",
    "tests/sql/fail_task_test.ts",
    "tests/worker/waits_crash_test.ts",
    "tests/dev/temp_postgres_test.ts",
  ];
  assert.deepEqual(await testPhases(ROOT, selected, true), {
    parallel: ["tests/dsl/flow_test.ts", "tests/sql/fail_task_test.ts"],
    serial: ["tests/worker/waits_crash_test.ts", "tests/dev/temp_postgres_test.ts"],
    ranOnce: [],
  });
  assert.deepEqual(await testPhases(ROOT, selected, false), {
    parallel: ["tests/sql/fail_task_test.ts"],
    serial: ["tests/worker/waits_crash_test.ts"],
    ranOnce: ["tests/dsl/flow_test.ts", "tests/dev/temp_postgres_test.ts"],
  });
});
