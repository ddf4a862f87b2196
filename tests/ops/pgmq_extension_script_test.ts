import assert from "node:assert/strict";
import { pgmqExtensionScript } from "../../scripts/_pgmq_extension.ts";
import { PGMQ_COMPAT_SQL_URL } from "../../src/migrations/install_pgmq.ts";

Deno.test("the packaged extension script is the compat layer without its guard and create schema", async () => {
  const compat = await Deno.readTextFile(PGMQ_COMPAT_SQL_URL);
  const script = pgmqExtensionScript(compat);
  // CREATE EXTENSION registers pgmq before its script runs (the guard would fire) and creates the
  // control file's schema itself (an extension script may not repeat it).
  assert.doesNotMatch(script, /Cannot install the PGMQ compatibility layer/);
  assert.doesNotMatch(script, /create schema/);
  assert.match(script, /^\\echo Use "CREATE EXTENSION pgmq"/m);
  assert.ok(script.includes("create or replace function pgmq.read("));
});

Deno.test("packaging the compat layer fails clearly when its markers are missing", () => {
  assert.throws(() => pgmqExtensionScript("create schema pgmq;\n"), {
    message: /^Cannot package the PGMQ compatibility layer as an extension: expected one pair of/,
  });
});
