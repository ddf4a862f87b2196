// The check both example projects share: their committed worker functions are what
// `functions generate` writes from their flows, run as the project's own task would.
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);

/** The function and file counts `functions generate --check` reports for a project. */
export interface GeneratedCounts {
  /** Worker functions the project's flows need. */
  readonly functions: number;
  /** Files written for them. */
  readonly files: number;
}

/**
 * Runs `cli.ts functions generate --check` against an example project's deno.json and asserts it
 * finds the committed functions up to date, with the counts given.
 *
 * @param project The project folder from the repository root, e.g. `examples/back_office`.
 * @param expected The counts the check must report.
 */
export async function assertGeneratedFunctionsUpToDate(
  project: string,
  expected: GeneratedCounts,
): Promise<void> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "cli.ts",
      "functions",
      "generate",
      "--config",
      `${project}/deno.json`,
      "--check",
    ],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdin: "null",
  }).output();
  const decoder = new TextDecoder();
  const output = decoder.decode(stdout) + decoder.decode(stderr);
  assert.equal(code, 0, `run \`deno task functions:generate\` in ${project}:\n${output}`);
  assert.match(
    output,
    new RegExp(`up to date \\(${expected.functions} worker functions, ${expected.files} files\\)`),
  );
}
