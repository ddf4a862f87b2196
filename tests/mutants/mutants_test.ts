// The mutation audit's list cannot go stale silently: every mutant still applies to the live
// source (its search text is found exactly once) and is a one-line change with existing guards.
import assert from "node:assert/strict";
import { applyMutant, changedLines } from "../../scripts/_mutants.ts";
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
