// `deno task test` on a machine without PostgreSQL: the embedded subset's selection rule, and the
// runner choosing it (SLUICE_TEST_EMBEDDED=1 stands in for missing server binaries, which this
// machine has) with its notice and its usual last line.
import assert from "node:assert/strict";
import { EMBEDDED_DEMO, embeddedSubset } from "../../scripts/_embedded_subset.ts";

const ROOT = new URL("../../", import.meta.url);

Deno.test("the embedded subset holds the embedded, testing-kit and pure tests, not the server ones", async () => {
  const { files, leftOut } = await embeddedSubset(ROOT);
  for (
    const file of [
      "tests/embedded/flows_test.ts",
      "tests/testing/kit_test.ts",
      "tests/testing/user_project_test.ts",
      "tests/cli/dev_embedded_test.ts",
      "tests/dev/embedded_postgres_test.ts",
      "tests/dsl/flow_test.ts",
    ]
  ) assert.ok(files.includes(file), `${file} is not in the subset`);
  const reasons = Object.fromEntries(leftOut.map(({ file, reason }) => [file, reason]));
  assert.equal(reasons["tests/sql/start_tasks_test.ts"], "imports tests/_db.ts");
  assert.match(reasons["tests/dev/temp_postgres_test.ts"], /throwaway PostgreSQL/);
  assert.match(reasons[EMBEDDED_DEMO.file], /embedded test runs on its own/);
  assert.equal(files.filter((file) => file in reasons).length, 0);
});

Deno.test("deno task test without a server runs the embedded subset, says so, and ends with the count", async () => {
  const env: Record<string, string> = {
    ...Deno.env.toObject(),
    SLUICE_TEST_EMBEDDED: "1",
    NO_COLOR: "1",
  };
  delete env.DATABASE_URL;
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "scripts/test.ts", "tests/docs/citations_test.ts", "tests/sql/"],
    cwd: ROOT,
    env,
    clearEnv: true,
    stdin: "null",
  }).output();
  const out = new TextDecoder().decode(stdout).trimEnd().split("\n");
  const err = new TextDecoder().decode(stderr);
  assert.equal(code, 0, err);
  assert.match(err, /SLUICE_TEST_EMBEDDED is set: running the EMBEDDED SUBSET on the embedded/);
  assert.match(err, /1 test files\n/, "the narrowed subset is the one pure file");
  assert.match(err, /\ntest: {3}tests\/sql\/start_tasks_test\.ts: imports tests\/_db\.ts\n/);
  assert.match(err, /bash scripts\/setup\.sh/);
  assert.match(out.at(-1)!, /^[1-9]\d* passed, 0 failed(, \d+ skipped)?$/);
});
