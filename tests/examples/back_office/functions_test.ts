import assert from "node:assert/strict";

const ROOT = new URL("../../../", import.meta.url);
const PROJECT = "examples/back_office";

async function run(args: string[]): Promise<{ code: number; output: string }> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdin: "null",
  }).output();
  const decoder = new TextDecoder();
  return { code, output: decoder.decode(stdout) + decoder.decode(stderr) };
}

Deno.test("back office: the committed step functions are what functions:generate writes", async () => {
  const { code, output } = await run([
    "run",
    "-A",
    "cli.ts",
    "functions",
    "generate",
    "--config",
    `${PROJECT}/deno.json`,
    "--check",
  ]);
  assert.equal(code, 0, `run \`deno task functions:generate\` in ${PROJECT}:\n${output}`);
  assert.match(output, /up to date \(25 worker functions, 53 files\)/);
});
