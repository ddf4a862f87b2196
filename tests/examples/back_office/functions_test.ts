import { assertGeneratedFunctionsUpToDate } from "../_generated_functions.ts";

Deno.test("back office: the committed step functions are what functions:generate writes", async () => {
  await assertGeneratedFunctionsUpToDate("examples/back_office", { functions: 25, files: 53 });
});
