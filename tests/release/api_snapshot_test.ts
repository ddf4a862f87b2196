import assert from "node:assert/strict";
import { apiSurface, SNAPSHOT } from "./_api_surface.ts";

// Changing an export (a name, a signature, a type's shape) must be deliberate: the committed
// snapshot says what the published modules offer, and a difference fails here with the diff.

async function readableDiff(expected: string, actual: string): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "sluice_api_" });
  try {
    await Deno.writeTextFile(`${dir}/api_snapshot.json`, expected);
    await Deno.writeTextFile(`${dir}/current_surface.json`, actual);
    const output = await new Deno.Command("git", {
      args: [
        "diff",
        "--no-index",
        "--no-color",
        "-U3",
        "api_snapshot.json",
        "current_surface.json",
      ],
      cwd: dir,
      stdout: "piped",
      stderr: "piped",
    }).output();
    return new TextDecoder().decode(output.stdout);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("the public type surface matches tests/release/api_snapshot.json", async () => {
  const actual = await apiSurface();
  let expected: string;
  try {
    expected = await Deno.readTextFile(SNAPSHOT);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    assert.fail("tests/release/api_snapshot.json is missing: run deno task api:snapshot");
  }
  if (actual === expected) return;
  assert.fail(
    "The public type surface changed. If that is intended, run deno task api:snapshot and " +
      `commit tests/release/api_snapshot.json.\n${await readableDiff(expected, actual)}`,
  );
});
