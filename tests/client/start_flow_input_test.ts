// startFlow() and hostile input: non-JSON values and oversized inputs are refused, naming the
// path, before anything is written.
import assert from "node:assert/strict";
import { startFlow } from "../../src/client/mod.ts";
import { compileFlow } from "../../src/admin/mod.ts";
import { JsonSizeError, JsonValueError } from "../../src/dsl/errors.ts";
import { Flow } from "../../src/dsl/flow.ts";
import type { Json } from "../../src/dsl/json.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";

const flow = new Flow<Json>({ slug: "intake" }).step({ slug: "take" }, () => 1);

const cyclic: Record<string, unknown> = {};
cyclic.self = cyclic;

const nonJson: [unknown, string, string][] = [
  [Number.NaN, "input", "NaN is not JSON"],
  [undefined, "input", "undefined is not JSON"],
  [{ x: Number.NaN }, "input.x", "NaN is not JSON"],
  [{ x: Infinity }, "input.x", "Infinity is not JSON"],
  [{ x: -Infinity }, "input.x", "-Infinity is not JSON"],
  [{ f: () => 1 }, "input.f", "a function is not JSON"],
  [{ s: Symbol("s") }, "input.s", "a symbol is not JSON"],
  [{ n: 10n }, "input.n", "a bigint (10n) is not JSON"],
  [{ lines: [1, undefined] }, "input.lines[1]", "undefined is not JSON"],
  [{ lines: [1, , 3] }, "input.lines[1]", "undefined is not JSON"],
  [
    { at: new Date(0) },
    "input.at",
    "an instance of Date is not JSON (only plain objects and arrays are)",
  ],
  [{ [Symbol("k")]: 1 }, "input", "a symbol key is not JSON"],
  [cyclic, "input.self", "a cycle is not JSON"],
  [
    { "unit price": { note: "a\u0000b" } },
    'input["unit price"].note',
    "the string holds \\u0000, which Postgres cannot store in jsonb",
  ],
  [
    { ["k\u0000"]: 1 },
    'input["k\\u0000"]',
    "the key holds \\u0000, which Postgres cannot store in jsonb",
  ],
  [
    { text: "\ud800" },
    "input.text",
    "the string holds a lone UTF-16 surrogate, which Postgres cannot store in jsonb",
  ],
];

async function written(db: TestDatabase): Promise<{ runs: number; messages: number }> {
  const [row] = await db.sql<{ runs: number; messages: number }[]>`
    select (select count(*)::int from sluice.runs) as runs,
      (select count(*)::int from pgmq.q_intake) as messages`;
  return row;
}

Deno.test("startFlow() refuses a value that is not JSON, naming its path, before writing anything", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, flow);
  for (const [input, path, detail] of nonJson) {
    for (const target of [flow, "intake"] as const) {
      const error = await startFlow(db.sql, target as string, input as Json).catch((e) => e);
      assert.ok(error instanceof JsonValueError, `${path}: ${error}`);
      assert.equal(error.message, `Cannot start flow "intake": ${path}: ${detail}`);
      assert.equal(error.path, path);
      assert.equal(error.detail, detail);
    }
  }
  assert.deepEqual(await written(db), { runs: 0, messages: 0 });

  // An undefined property is a missing key, as the Json types and JSON.stringify have it.
  const runId = await startFlow(db.sql, flow, { kept: 1, dropped: undefined });
  const [{ input }] = await db.sql`select input from sluice.runs where run_id = ${runId}`;
  assert.deepEqual(input, { kept: 1 });
});

Deno.test("startFlow() refuses an input above maxInputBytes (16 MiB by default), counting UTF-8 bytes", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, flow);
  const defaultLimit = 16 * 1024 * 1024;
  // The JSON text is the string plus its two quotes.
  const atLimit = "x".repeat(defaultLimit - 2);
  const tooLarge = await startFlow(db.sql, flow, `${atLimit}x`).catch((e) => e);
  assert.ok(tooLarge instanceof JsonSizeError, String(tooLarge));
  assert.equal(
    tooLarge.message,
    `Cannot start flow "intake": input is ${defaultLimit + 1} bytes as JSON, ` +
      `more than the limit of ${defaultLimit} bytes`,
  );
  assert.equal(tooLarge.bytes, defaultLimit + 1);
  assert.equal(tooLarge.maxBytes, defaultLimit);

  // "é" is one UTF-16 unit but two UTF-8 bytes; "😀" two units, four bytes.
  const small = { maxInputBytes: 12 };
  const multiByte = await startFlow(db.sql, flow, "éééé😀", small).catch((e) => e);
  assert.ok(multiByte instanceof JsonSizeError);
  assert.equal(multiByte.bytes, 14);
  assert.deepEqual(await written(db), { runs: 0, messages: 0 });

  await startFlow(db.sql, flow, "éééé", small);
  await startFlow(db.sql, flow, atLimit);
  assert.deepEqual(await written(db), { runs: 2, messages: 2 });

  for (const maxInputBytes of [0, -1, 1.5, Number.NaN]) {
    await assert.rejects(
      () => startFlow(db.sql, flow, 1, { maxInputBytes }),
      (error: unknown) =>
        error instanceof RangeError &&
        error.message ===
          `Cannot start flow "intake": maxInputBytes must be a positive integer of bytes, got ${maxInputBytes}`,
    );
  }
});

Deno.test("startFlow() by name parses a string holding a JSON object or array: the run starts with the value", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, flow);
  const inputOf = async (runId: string) =>
    (await db.sql<{ input: Json }[]>`select input from sluice.runs where run_id = ${runId}::uuid`)[
      0
    ]
      .input;
  // A request body or a command-line argument passed on as text.
  assert.deepEqual(await inputOf(await startFlow(db.sql, "intake", '{"orderId": 7}')), {
    orderId: 7,
  });
  assert.deepEqual(await inputOf(await startFlow(db.sql, "intake", ' [1, {"a": null}]\n')), [
    1,
    { a: null },
  ]);
  // Other strings are strings: not JSON text of an object or array.
  for (const text of ["Ada", "42", "true", "{not json", '"quoted"']) {
    assert.equal(await inputOf(await startFlow(db.sql, "intake", text)), text, text);
  }
  // The flow object is typed: its input is taken as given.
  assert.equal(await inputOf(await startFlow(db.sql, flow, '{"orderId": 7}')), '{"orderId": 7}');
  // The parsed value is checked like any input.
  await assert.rejects(
    startFlow(db.sql, "intake", `[${"1,".repeat(10)}1]`, { maxInputBytes: 10 }),
    JsonSizeError,
  );
});
