// The mutation audit's list cannot go stale silently: every mutant still applies to the live
// source (its search text is found exactly once, in the last migration that defines its routine)
// and is a one-line change with existing guards.
import assert from "node:assert/strict";
import { applyMutant, changedLines } from "../../scripts/_mutants.ts";
import { MIGRATION_FILES } from "../../src/migrations/migration_files.ts";
import { MUTANTS } from "./mutants.ts";

const ROOT = new URL("../../", import.meta.url);

Deno.test("every mutant's search text is found exactly once in its file, and its guards exist", async () => {
  for (const mutant of MUTANTS) {
    const source = await Deno.readTextFile(new URL(mutant.file, ROOT));
    // applyMutant throws a StaleMutantError naming the mutant and the count otherwise.
    const mutated = applyMutant(mutant, source);
    assert.notEqual(mutated, source, mutant.id);
    for (const guard of mutant.guards) {
      assert.ok(guard.endsWith("_test.ts"), `${mutant.id}: ${guard} is not a test file`);
      await Deno.stat(new URL(guard, ROOT));
    }
  }
});

Deno.test("every mutant changes exactly one line, and the ids are unique", () => {
  for (const mutant of MUTANTS) {
    assert.equal(changedLines(mutant.search, mutant.replace), 1, mutant.id);
  }
  const ids = MUTANTS.map((m) => m.id);
  assert.deepEqual([...new Set(ids)], ids);
});

Deno.test("a mutant whose search text is missing or repeated is refused", () => {
  const mutant = { ...MUTANTS[0], search: "x = 1" };
  assert.throws(() => applyMutant(mutant, "y = 2"), /found 0 times/);
  assert.throws(() => applyMutant(mutant, "x = 1; x = 1"), /found 2 times/);
  assert.equal(applyMutant(mutant, "a; x = 1; b"), `a; ${mutant.replace}; b`);
});

/** The routine (`schema.name`) whose definition holds `index` of a migration's text. */
function routineAt(source: string, index: number): string | null {
  const definitions = [
    ...source.slice(0, index).matchAll(
      /create (?:or replace )?(?:function|procedure) ((?:sluice|pgmq)\.\w+)\s*\(/gi,
    ),
  ];
  return definitions.at(-1)?.[1].toLowerCase() ?? null;
}

Deno.test("every SQL mutant changes the live definition: no later migration redefines its routine", async () => {
  const stale: string[] = [];
  for (const mutant of MUTANTS.filter((m) => m.file.startsWith("supabase/migrations/"))) {
    const source = await Deno.readTextFile(new URL(mutant.file, ROOT));
    const routine = routineAt(source, source.indexOf(mutant.search));
    assert.ok(routine !== null, `${mutant.id}: its search text is in no routine of ${mutant.file}`);
    const later = MIGRATION_FILES.slice(
      MIGRATION_FILES.indexOf(mutant.file.slice("supabase/migrations/".length)) + 1,
    );
    const definition = new RegExp(
      `create (?:or replace )?(?:function|procedure) ${routine.replace(".", "\\.")}\\s*\\(`,
      "i",
    );
    for (const file of later) {
      const text = await Deno.readTextFile(new URL(`supabase/migrations/${file}`, ROOT));
      if (definition.test(text)) stale.push(`${mutant.id}: ${routine} is redefined by ${file}`);
    }
  }
  assert.deepEqual(stale, []);
});

Deno.test("the live-definition check finds the routine a search text lies in", () => {
  const source = "create or replace function sluice.a(x int)\nbody a;\n" +
    "CREATE OR REPLACE FUNCTION sluice.b() RETURNS void\nbody b;\n";
  assert.equal(routineAt(source, source.indexOf("body a")), "sluice.a");
  assert.equal(routineAt(source, source.indexOf("body b")), "sluice.b");
  assert.equal(routineAt(source, 0), null);
});
