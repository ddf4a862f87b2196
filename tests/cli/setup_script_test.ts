// scripts/setup.sh puts both tools a newcomer needs on one PATH entry: a copy of the script in a
// scratch checkout, with the Deno and Supabase CLI already there (nothing is downloaded), writes
// launchers for `deno` and `supabase` into .tools/bin and says how to put that on PATH.
import assert from "node:assert/strict";
import { dirname, join } from "node:path";

const ROOT = new URL("../../", import.meta.url);

Deno.test("scripts/setup.sh prints the PATH that runs both deno and supabase", async () => {
  const supabase = new URL(".tools/supabase", ROOT).pathname;
  try {
    Deno.statSync(join(supabase, "node_modules/.bin/supabase"));
  } catch {
    throw new Error(`Cannot find the Supabase CLI under ${supabase}: run bash scripts/setup.sh`);
  }
  const scratch = await Deno.realPath(await Deno.makeTempDir({ prefix: "sluice-setup-" }));
  try {
    await Deno.mkdir(join(scratch, "scripts"));
    await Deno.mkdir(join(scratch, ".tools"));
    await Deno.copyFile(new URL("scripts/setup.sh", ROOT), join(scratch, "scripts/setup.sh"));
    await Deno.symlink(supabase, join(scratch, ".tools/supabase"));
    const run = await new Deno.Command("bash", {
      args: ["scripts/setup.sh"],
      cwd: scratch,
      // deno on PATH (no install), a database (no PostgreSQL install), a browser (no Chromium).
      env: {
        PATH: `${dirname(Deno.execPath())}:/usr/bin:/bin`,
        HOME: Deno.env.get("HOME") ?? "/",
        DATABASE_URL: "postgres://unused@127.0.0.1:1/unused",
        SLUICE_CHROMIUM: "/bin/true",
      },
      clearEnv: true,
      stdin: "null",
    }).output();
    const stdout = new TextDecoder().decode(run.stdout);
    const stderr = new TextDecoder().decode(run.stderr);
    assert.equal(run.code, 0, stderr);
    const bin = join(scratch, ".tools/bin");
    assert.equal(stdout.trim().split("\n").at(-1), bin);
    assert.match(stderr, new RegExp(`put deno and supabase on PATH: export PATH="${bin}:\\$PATH"`));
    for (
      const [tool, version] of [["deno", /^deno 2\./], ["supabase", /^\d+\.\d+\.\d+$/]] as const
    ) {
      const probe = await new Deno.Command("bash", {
        args: ["-c", `export PATH="${bin}:/usr/bin:/bin"; command -v ${tool}; ${tool} --version`],
        // The Supabase CLI notes its version check under ./supabase/.temp: the scratch one.
        cwd: scratch,
        clearEnv: true,
        env: { HOME: Deno.env.get("HOME") ?? "/" },
      }).output();
      const [path, first] = new TextDecoder().decode(probe.stdout).trim().split("\n");
      assert.equal(probe.code, 0, new TextDecoder().decode(probe.stderr));
      assert.equal(path, join(bin, tool));
      assert.match(first, version);
    }
  } finally {
    await Deno.remove(scratch, { recursive: true });
  }
});
