import assert from "node:assert/strict";
import { frozenCommits, git, NO_RELEASE, readReleases, ROOT } from "./_releases.ts";

// From a release on, its migration files never change: a database migrated at that release holds
// them in its ledger, and an edited or deleted file would leave it unable to upgrade. The ledger
// checksums catch it in a database; this catches it before anything is deployed.

const MIGRATIONS = "supabase/migrations/";
const targets = await frozenCommits();

Deno.test("releases.json is a list of {version, commit, date} with unique versions", async () => {
  await readReleases();
});

Deno.test({
  name: targets.length === 0
    ? `released migrations are unchanged (skipped: ${NO_RELEASE})`
    : `released migrations are unchanged (${targets.map((t) => t.label).join(", ")})`,
  ignore: targets.length === 0,
  fn: async () => {
    const shallow = (await git("rev-parse", "--is-shallow-repository")).trim();
    assert.equal(
      shallow,
      "false",
      "Cannot check released migrations: this checkout is shallow; fetch the full history " +
        "(git fetch --unshallow, or actions/checkout with fetch-depth: 0)",
    );
    const problems: string[] = [];
    for (const { label, commit } of targets) {
      try {
        await git("cat-file", "-e", `${commit}^{commit}`);
      } catch {
        assert.fail(
          `Cannot check released migrations: release ${label} names commit ${commit}, ` +
            "which this checkout does not have",
        );
      }
      const files = (await git("ls-tree", "--name-only", `${commit}:${MIGRATIONS}`))
        .split("\n").filter((name) => name.endsWith(".sql"));
      assert.ok(files.length > 0, `release ${label} (${commit}) has no files in ${MIGRATIONS}`);
      for (const file of files) {
        const released = await git("show", `${commit}:${MIGRATIONS}${file}`);
        let current: string;
        try {
          current = await Deno.readTextFile(new URL(MIGRATIONS + file, ROOT));
        } catch (error) {
          if (!(error instanceof Deno.errors.NotFound)) throw error;
          problems.push(`${MIGRATIONS}${file} (released in ${label}) was deleted`);
          continue;
        }
        if (current !== released) {
          problems.push(`${MIGRATIONS}${file} (released in ${label}) was changed`);
        }
      }
    }
    assert.deepEqual(
      problems,
      [],
      `Released migrations must never change; add a new migration instead:\n  ${
        problems.join("\n  ")
      }`,
    );
  },
});
