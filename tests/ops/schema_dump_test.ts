import assert from "node:assert/strict";
import { MIGRATIONS_DIRECTORY } from "../../src/migrations/migrate.ts";

const SCRIPT = new URL("../../scripts/schema_dump.ts", import.meta.url).pathname;

async function schemaCheck(...args: string[]) {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", SCRIPT, "--check", ...args],
    stdin: "null",
  }).output();
  const decoder = new TextDecoder();
  return { code, stdout: decoder.decode(stdout), stderr: decoder.decode(stderr) };
}

Deno.test("the schema check passes when supabase/schemas/ is what the shipped migrations create", async () => {
  const { code, stdout, stderr } = await schemaCheck();
  assert.equal(code, 0, stderr);
  assert.equal(
    stdout,
    "schema: supabase/schemas/ and docs/sql.md match the migrations\n",
  );
});

Deno.test("the schema check fails with a diff naming what a migration added without a new dump", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sluice-migrations-" });
  try {
    for await (const entry of Deno.readDir(MIGRATIONS_DIRECTORY)) {
      if (entry.isFile) {
        await Deno.copyFile(new URL(entry.name, MIGRATIONS_DIRECTORY), `${dir}/${entry.name}`);
      }
    }
    await Deno.writeTextFile(
      `${dir}/99991231000000_sluice_drift.sql`,
      "create table sluice.schema_drift_probe (id int primary key);\n",
    );
    const { code, stdout, stderr } = await schemaCheck("--migrations", dir);
    assert.equal(code, 1);
    assert.match(
      stderr,
      /what the migrations create differs from the committed supabase\/schemas\/tables\/schema_drift_probe\.sql.*run 'deno task schema:dump'/,
    );
    assert.match(stdout, /^\+CREATE TABLE sluice\.schema_drift_probe \($/m);
    assert.match(stdout, /^--- supabase\/schemas\/tables\/schema_drift_probe\.sql \(committed\)$/m);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
