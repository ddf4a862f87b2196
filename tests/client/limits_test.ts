// The database's size limits reach a producer as a typed error (SQLSTATE SLL01), and a concrete
// flow's own limit is checked early in TypeScript (docs/sql.md#limits).
import assert from "node:assert/strict";
import { Flow, JsonSizeError, LimitExceededError, startFlow } from "../../mod.ts";
import { compileFlow } from "../../src/admin/mod.ts";
import { freshDatabase } from "../_db.ts";

Deno.test("startFlow() maps a refusal of the database's limit to LimitExceededError; nothing is written", async () => {
  await using db = await freshDatabase();
  const flow = new Flow<{ text: string }>({ slug: "small_input", maxInputBytes: 100 })
    .step({ slug: "one" }, (input) => input.text.length);
  await compileFlow(db.sql, flow);
  const input = { text: "x".repeat(200) };

  // By name (an alias may name another version): only the default is checked in TypeScript,
  // the database refuses with the flow's limit.
  const error = await startFlow(db.sql, "small_input", input).catch((e) => e);
  assert.ok(error instanceof LimitExceededError, String(error));
  assert.equal(error.limit, "max_input_bytes");
  assert.equal(error.size, JSON.stringify(input).length + 1);
  assert.equal(error.max, 100);
  assert.match(error.message, /^Cannot start flow "small_input": the input is \d+ bytes as JSON/);

  // The concrete flow: its own limit, refused before the database call.
  await assert.rejects(startFlow(db.sql, flow, input), JsonSizeError);
  const [{ runs }] = await db.sql`select count(*)::int as runs from sluice.runs`;
  assert.equal(runs, 0);
});

Deno.test("startFlow() maps a root map over max_map_tasks to LimitExceededError", async () => {
  await using db = await freshDatabase();
  const flow = new Flow<number[]>({ slug: "narrow", maxMapTasks: 2 })
    .map({ slug: "each" }, (n) => n);
  await compileFlow(db.sql, flow);
  const error = await startFlow(db.sql, flow, [1, 2, 3]).catch((e) => e);
  assert.ok(error instanceof LimitExceededError, String(error));
  assert.deepEqual([error.limit, error.size, error.max], ["max_map_tasks", 3, 2]);
});
