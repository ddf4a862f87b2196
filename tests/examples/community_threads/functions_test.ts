import { assertGeneratedFunctionsUpToDate } from "../_generated_functions.ts";

Deno.test("community threads: the committed step functions are what functions:generate writes", async () => {
  await assertGeneratedFunctionsUpToDate("examples/community_threads", { functions: 3, files: 9 });
});
