import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";

// supabase/schemas/functions/ holds the readable source of every routine (docs/sql.md): applied
// over the migrated schema, each file must leave every definition exactly as the migrations made
// it, and every routine the migrations create must have its file.

const SOURCES = new URL("../../supabase/schemas/functions/", import.meta.url);

async function sourceFiles(): Promise<string[]> {
  const files: string[] = [];
  for await (const entry of Deno.readDir(SOURCES)) {
    if (entry.isFile && entry.name.endsWith(".sql")) files.push(entry.name);
  }
  return files.sort();
}

Deno.test("every routine's source under supabase/schemas/functions/ is what the migrations create, and every routine has one", async () => {
  await using db = await freshDatabase();
  const definitions = async (sql: typeof db.sql) =>
    new Map(
      (await sql<{ id: string; name: string; def: string }[]>`
        select p.oid::regprocedure::text as id, p.proname as name, pg_get_functiondef(p.oid) as def
        from pg_proc p
        where p.pronamespace = 'sluice'::regnamespace and p.prokind in ('f', 'p')`)
        .map((row) => [row.id, row]),
    );
  const migrated = await definitions(db.sql);
  const files = await sourceFiles();
  assert.ok(files.length >= 100, `only ${files.length} routine sources`);
  const problems: string[] = [];
  for (const file of files) {
    const text = await Deno.readTextFile(new URL(file, SOURCES));
    await db.sql.begin(async (tx) => {
      await tx.unsafe(text);
      const after = await definitions(tx as unknown as typeof db.sql);
      for (const [id, row] of after) {
        const before = migrated.get(id);
        if (before === undefined) problems.push(`${file} defines ${id}, which no migration does`);
        else if (before.def !== row.def) problems.push(`${file} changes ${id}`);
      }
      throw new Rollback();
    }).catch((error) => {
      if (!(error instanceof Rollback)) throw error;
    });
  }
  const named = new Set(files.map((file) => file.replace(/\.sql$/, "")));
  for (const [id, row] of migrated) {
    if (!named.has(row.name)) problems.push(`${id} has no source file`);
  }
  assert.deepEqual(
    problems,
    [],
    "supabase/schemas/ and the migrations disagree: after editing a source run " +
      "'deno task sql:migration <name>'; after a hand-written migration 'deno task schema:dump --force'",
  );
});

/** Ends the transaction of one source's trial: nothing it did is kept. */
class Rollback extends Error {}
