import assert from "node:assert/strict";
import { greetUser } from "../../examples/flows.ts";
import { resolveWorkerTarget } from "../../src/worker/worker_target.ts";
import { workerFunctionName } from "../../src/dsl/function_name.ts";

Deno.test("workerFunctionName() lowercases, turns underscores into hyphens and joins flow and step with --", () => {
  assert.equal(workerFunctionName("greet_user", null), "greet-user");
  assert.equal(workerFunctionName("Thread_Digest", "fetch_Posts"), "thread-digest--fetch-posts");
  assert.equal(workerFunctionName("orders_v2", "ship"), "orders-v2--ship");
});

Deno.test("workerFunctionName() keeps pairs apart that a single hyphen would merge", () => {
  const names = [
    workerFunctionName("a_b", "c"),
    workerFunctionName("a", "b_c"),
    workerFunctionName("a_b_c", null),
    workerFunctionName("a", "b"),
    workerFunctionName("a_b", null),
  ];
  assert.deepEqual(names, ["a-b--c", "a--b-c", "a-b-c", "a--b", "a-b"]);
  assert.equal(new Set(names).size, names.length);
});

Deno.test("workerFunctionName() produces names Supabase accepts", () => {
  for (const name of [workerFunctionName("f1", "s_2"), workerFunctionName("Flow", null)]) {
    assert.match(name, /^[a-z][a-z0-9-]*$/);
  }
});

Deno.test("a plain flow's worker, started by hand, belongs to the function the generator writes", async () => {
  const manifest = JSON.parse(
    await Deno.readTextFile(
      new URL("../../supabase/functions/sluice.manifest.json", import.meta.url),
    ),
  ) as { functions: { function_name: string; flow_slug: string }[] };
  const generated = manifest.functions.find((entry) => entry.flow_slug === greetUser.slug);
  assert.equal(resolveWorkerTarget(greetUser).functionName, "greet-user");
  assert.equal(resolveWorkerTarget(greetUser).functionName, generated?.function_name);
});
