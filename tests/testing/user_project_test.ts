// docs/testing.md's test file, run with `deno test` in a temporary user project that loads sluice
// as the published package (jsr: specifiers, from the JSR-shaped loopback registry of the files
// `deno publish` would upload, selected with JSR_URL), with no DATABASE_URL: the testing kit's
// embedded database and test clock, as a user gets them.
import assert from "node:assert/strict";
import { join } from "node:path";
import { serveRegistry } from "../cli/_registry.ts";

const ROOT = new URL("../../", import.meta.url);

Deno.test("docs/testing.md's test file passes in a user project on the embedded database", async () => {
  const doc = await Deno.readTextFile(new URL("docs/testing.md", ROOT));
  const code = doc.match(/```ts\n([\s\S]*?)```/)?.[1];
  assert.ok(code, "docs/testing.md has no ts block");
  await using registry = await serveRegistry();
  const dir = await Deno.makeTempDir({ prefix: "sluice-user-testing-" });
  try {
    // As install maps it; `@sluice/sluice/testing` resolves through the same entry.
    const imports = { [registry.name]: `jsr:${registry.name}@${registry.version}` };
    await Deno.writeTextFile(join(dir, "deno.json"), JSON.stringify({ imports }, null, 2));
    await Deno.writeTextFile(join(dir, "prices_test.ts"), code);
    const env: Record<string, string> = {
      ...Deno.env.toObject(),
      JSR_URL: registry.url,
      NO_COLOR: "1",
    };
    delete env.DATABASE_URL;
    const { code: exit, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: ["test", "-A", "--no-lock", "--config", "deno.json", "prices_test.ts"],
      cwd: dir,
      env,
      clearEnv: true,
      stdin: "null",
    }).output();
    const out = new TextDecoder().decode(stdout);
    const err = new TextDecoder().decode(stderr);
    assert.equal(exit, 0, `deno test exited ${exit}\nstdout:\n${out}\nstderr:\n${err}`);
    assert.match(out, /prices retries the rate lookup and prices every sku \.\.\. ok/);
    assert.match(out, /ok \| 1 passed \| 0 failed/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
