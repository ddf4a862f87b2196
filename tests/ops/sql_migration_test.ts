import assert from "node:assert/strict";
import {
  migrationName,
  MigrationNameError,
  nextMigrationFile,
  sourceBody,
} from "../../scripts/sql_migration.ts";
import { copyCheckout } from "../../scripts/_checkout_copy.ts";

Deno.test("sql:migration names the next migration after every existing one, in UTC", () => {
  const now = new Date("2026-12-07T05:47:06.123Z");
  assert.equal(
    nextMigrationFile(["20261207000200_sluice_a.sql"], "fix", now),
    "20261207054706_sluice_fix.sql",
  );
  // A file stamped later than now (a hand-picked timestamp) is still followed.
  assert.equal(
    nextMigrationFile(["20261207000200_sluice_a.sql", "20261231000000_sluice_b.sql"], "fix", now),
    "20261231000001_sluice_fix.sql",
  );
});

Deno.test("sql:migration takes a lowercase slug and names a bad one", () => {
  assert.equal(migrationName("fail_task_fencing"), "fail_task_fencing");
  for (const bad of [undefined, "", "Fix", "1fix", "fix-it", "x".repeat(64)]) {
    assert.throws(
      () => migrationName(bad),
      (error: Error) =>
        error instanceof MigrationNameError && error.message.includes(JSON.stringify(bad ?? "")),
    );
  }
});

Deno.test("sql:migration copies a source without its two generated header lines", () => {
  const text = [
    "-- sluice.f, as the migrations create it (last defined in supabase/migrations/x.sql).",
    "-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).",
    "",
    "-- Why f exists.",
    "CREATE OR REPLACE FUNCTION sluice.f() RETURNS integer",
    "    LANGUAGE sql",
    "    AS $$ select 1 $$;",
    "",
  ].join("\n");
  assert.equal(
    sourceBody(text),
    "-- Why f exists.\nCREATE OR REPLACE FUNCTION sluice.f() RETURNS integer\n    LANGUAGE sql\n" +
      "    AS $$ select 1 $$;",
  );
});

Deno.test("editing a routine's source and running sql:migration writes a migration that the schema check then accepts", async () => {
  const dir = await copyCheckout("sluice_sql_migration_");
  try {
    const source = `${dir}/supabase/schemas/functions/stall_margin_seconds.sql`;
    const text = await Deno.readTextFile(source);
    assert.match(text, /AS \$\$ select 30 \$\$;/);
    await Deno.writeTextFile(source, text.replace("select 30", "select 31"));
    const run = async (...args: string[]) => {
      const output = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", ...args],
        cwd: dir,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      const decoder = new TextDecoder();
      return {
        code: output.code,
        out: decoder.decode(output.stdout) + decoder.decode(output.stderr),
      };
    };
    const before = await run("scripts/schema_dump.ts", "--check");
    assert.equal(before.code, 1, "an edited source differs from the migrations");
    const written = await run("scripts/sql_migration.ts", "margin_trial");
    assert.equal(written.code, 0, written.out);
    const match = /wrote supabase\/migrations\/(\d{14}_sluice_margin_trial\.sql) \((.+)\)/.exec(
      written.out,
    );
    assert.ok(match, written.out);
    assert.equal(match[2], "sluice.stall_margin_seconds()");
    const migration = await Deno.readTextFile(`${dir}/supabase/migrations/${match[1]}`);
    assert.match(migration, /CREATE OR REPLACE FUNCTION sluice\.stall_margin_seconds\(\)/);
    assert.match(migration, /select 31/);
    assert.doesNotMatch(migration, /FUNCTION sluice\.fail_task/, "only the changed routine");
    assert.match(
      await Deno.readTextFile(`${dir}/src/migrations/migration_files.ts`),
      new RegExp(`"${match[1]}",\\n\\];`),
    );
    const after = await run("scripts/schema_dump.ts", "--check");
    assert.equal(after.code, 0, after.out);
    const again = await run("scripts/sql_migration.ts", "nothing_left");
    assert.match(again.out, /no routine .* changed: nothing written/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
