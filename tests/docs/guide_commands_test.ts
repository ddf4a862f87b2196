// Every shell command of every guide (README.md, docs/**/*.md) has a test that runs it: the user
// project tests run every command of the guides a user follows, in a temporary project without a
// checkout; the few README commands that belong to this repository's checkout are run by CI and
// by their own test. A guide that gains a shell block without a runner fails here.
import assert from "node:assert/strict";
import { guideCommands, guideFiles } from "./_guides.ts";

/** The test that runs every command of a guide, in a temporary user project. */
const RUN_IN_A_USER_PROJECT: Record<string, string> = {
  "docs/getting_started.md": "tests/cli/user_project_test.ts",
  "docs/ops.md": "tests/ops/docs_commands_test.ts",
  "docs/run_control.md": "tests/ops/docs_commands_test.ts",
  "docs/dashboard.md": "tests/ops/docs_commands_test.ts",
  "docs/edge.md": "tests/ops/docs_commands_test.ts",
  "docs/rollout.md": "tests/ops/docs_commands_test.ts",
  "docs/monitoring.md": "tests/ops/docs_commands_test.ts",
  "docs/versions.md": "tests/ops/docs_commands_test.ts",
  "docs/schedules.md": "tests/ops/docs_commands_test.ts",
  // Against a database with pgflow's own SQL loaded beside sluice, the CLI run in-process.
  "docs/from_pgflow.md": "tests/docs/from_pgflow_test.ts",
};

/** The commands of this repository's checkout (README.md, docs/embedded.md), and what runs each. */
const CHECKOUT_COMMANDS: Record<string, string> = {
  'bash scripts/setup.sh && export PATH="$PWD/.tools/bin:$PATH"': ".ci/run",
  "deno task demo": "tests/examples/demo_test.ts",
  "deno task test": ".ci/run",
  "SLUICE_EMBEDDED=1 deno task demo": "tests/examples/demo_test.ts",
};

/** The guides whose commands belong to the checkout, not to a user project. */
const CHECKOUT_GUIDES = ["README.md", "docs/embedded.md"];

Deno.test("every shell command of every guide is run by a test, most in a user project", async () => {
  const counts: Record<string, number> = {};
  for (const path of guideFiles()) {
    const commands = guideCommands(path);
    if (commands.length === 0) continue;
    counts[path] = commands.length;
    const runner = RUN_IN_A_USER_PROJECT[path];
    if (runner !== undefined) {
      const source = await Deno.readTextFile(new URL(`../../${runner}`, import.meta.url));
      assert.ok(source.includes(`"${path}"`), `${runner} does not run ${path}`);
      continue;
    }
    assert.ok(
      CHECKOUT_GUIDES.includes(path),
      `${path} has shell commands no test runs; add it to a runner`,
    );
    const userProject = guideCommands("docs/getting_started.md");
    for (const command of commands) {
      assert.ok(
        command in CHECKOUT_COMMANDS || userProject.includes(command),
        `${path} runs \`${command}\`, which no test runs`,
      );
    }
  }
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  assert.ok(total >= 80, `only ${total} commands found`);
  console.log(`shell commands in the guides: ${total} ${JSON.stringify(counts)}`);
});
