// The one-round-trip builder (src/db/inline_sql.ts): each value quoted by its type, checked
// against the server's own reading of the text where the quoting matters.
import assert from "node:assert/strict";
import {
  inline,
  integer,
  jsonb,
  jsonText,
  SerializedJson,
  simpleQuery,
  storableText,
  uuid,
} from "../../src/db/inline_sql.ts";
import { freshDatabase } from "../_db.ts";

Deno.test("text becomes an escape-string literal with quotes and backslashes doubled", () => {
  assert.equal(inline`select ${"plain"}`.text, "select E'plain'");
  assert.equal(inline`${"it's"}`.text, "E'it''s'");
  assert.equal(inline`${"a\\b"}`.text, "E'a\\\\b'");
  assert.equal(inline`${"\\'"}`.text, "E'\\\\'''");
  assert.equal(inline`${""}`.text, "E''");
});

Deno.test("text with a NUL is refused, naming it; storableText replaces NUL and lone surrogates", () => {
  assert.throws(() => inline`${"a\0b"}`, {
    name: "TypeError",
    message: 'Cannot quote text containing a NUL character: "a\\u0000b"',
  });
  assert.equal(storableText("a\0b\uD800c"), "a\uFFFDb\uFFFDc");
  assert.equal(inline`${storableText("a\0b")}`.text, "E'a\uFFFDb'");
});

Deno.test("numbers, booleans and null", () => {
  assert.equal(
    inline`${42}, ${1.5}, ${0}, ${true}, ${false}, ${null}`.text,
    "42, 1.5, 0, true, false, null",
  );
  // A negative number is parenthesized: `1-${-1}` must not become the comment `1--1`.
  assert.equal(inline`1-${-1}`.text, "1-(-1)");
  assert.equal(inline`${-0}`.text, "(0)");
  for (const bad of [NaN, Infinity, -Infinity, 2 ** 53]) {
    assert.throws(() => inline`${bad}`, { name: "RangeError" });
  }
  assert.equal(integer(7).text, "7");
  assert.equal(integer(-7).text, "(-7)");
  assert.throws(() => integer(1.5), {
    name: "RangeError",
    message: "Cannot quote 1.5 as an integer: not a safe integer",
  });
  assert.throws(() => inline`${undefined as unknown as null}`, {
    name: "TypeError",
    message: "Cannot quote a undefined in SQL: undefined",
  });
});

Deno.test("uuids are validated; null is a typed null", () => {
  const id = "6f1c0c2e-8f5e-4a43-9d43-2f7f6a0f0d11";
  assert.equal(uuid(id).text, `'${id}'::uuid`);
  assert.equal(uuid(null).text, "null::uuid");
  assert.throws(() => uuid("x'; drop table t; --"), {
    name: "TypeError",
    message: `Cannot quote "x'; drop table t; --" as a uuid`,
  });
});

Deno.test("JSON is composed by type, serialized pieces spliced as they are", () => {
  assert.equal(
    jsonText([{ a: "it's", b: 1, c: null, d: undefined, e: new SerializedJson('{"x":[1,2]}') }]),
    '[{"a":"it\'s","b":1,"c":null,"e":{"x":[1,2]}}]',
  );
  assert.equal(jsonText({ 'k"ey': "\\" }), '{"k\\"ey":"\\\\"}');
  assert.throws(() => jsonText({ n: NaN }), {
    name: "RangeError",
    message: "Cannot write NaN as JSON",
  });
  assert.equal(jsonb({ q: "it's \\" }).text, `E'{"q":"it''s \\\\\\\\"}'::jsonb`);
});

Deno.test("fragments nest: a piece built with inline is spliced, not quoted", () => {
  const read = inline`pgmq.read(${"q"}, ${integer(30)}, ${integer(5)})`;
  assert.equal(inline`select * from ${read} m`.text, "select * from pgmq.read(E'q', 30, 5) m");
});

Deno.test("the server reads every quoted value back as it was", async () => {
  await using db = await freshDatabase();
  const text = "it's a \\ back\\slash, a 'quote', \"double\", E'\\x41' and ünïcode";
  const output = { text, nested: [1, -2.5, true, null], serialized: "x" };
  const [row] = await simpleQuery<
    { t: string; n: number; i: number; b: boolean; z: null; u: string; j: unknown }[]
  >(
    db.sql,
    inline`select ${text}::text as t, 1-${-1.5}::float8 as n, ${integer(-3)} as i,
      ${true} as b, ${null}::text as z, ${uuid("6f1c0c2e-8f5e-4a43-9d43-2f7f6a0f0d11")} as u,
      ${jsonb({ ...output, serialized: new SerializedJson(JSON.stringify({ text })) })} as j`,
  );
  assert.deepEqual(row, {
    t: text,
    n: 2.5,
    i: -3,
    b: true,
    z: null,
    u: "6f1c0c2e-8f5e-4a43-9d43-2f7f6a0f0d11",
    j: { ...output, serialized: { text } },
  });
});
