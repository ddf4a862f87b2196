import assert from "node:assert/strict";
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
