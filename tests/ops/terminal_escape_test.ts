// Issue 43 finding 7: text stored in sluice's tables reaches the operator's terminal through the
// CLI; a role that can write a cancel reason or a handler error must not drive that terminal.
import assert from "node:assert/strict";
import { escapeControlCharacters } from "../../src/cli/commands/command_types.ts";
import { freshDatabase } from "../_db.ts";
import { compileFlow, startFlow } from "../sql/_fixtures.ts";
import { opsDone } from "./_ops.ts";

/** A clipboard write (OSC 52), a screen clear, a bell, a carriage return, DEL and a C1 CSI. */
const HOSTILE = "\x1b]52;c;aGk=\x07\x1b[2J\r\x7f\u009b31m";

/** Any character a terminal acts on, newlines and tabs aside. */
// deno-lint-ignore no-control-regex
const RAW_CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/;

Deno.test("escapeControlCharacters writes C0 (but tab and newline), DEL and C1 as \\u escapes", () => {
  assert.equal(
    escapeControlCharacters(`a\tb\nc${HOSTILE}`),
    "a\tb\nc\\u001b]52;c;aGk=\\u0007\\u001b[2J\\u000d\\u007f\\u009b31m",
  );
  assert.equal(escapeControlCharacters("plain é ✓"), "plain é ✓");
});

Deno.test("ops run and ops runs print a stored cancel reason's escape sequences escaped", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "escaped", steps: [{ slug: "only" }] });
  const runId = await startFlow(db.sql, "escaped", {});
  await db.sql`select sluice.cancel_run(${runId}::uuid, ${`stop ${HOSTILE}`})`;
  for (const args of [["run", runId], ["runs", "--flow", "escaped"]]) {
    const { code, out, err } = await opsDone(db, ...args);
    assert.equal(code, 0, err);
    assert.ok(!RAW_CONTROL.test(out), `raw control characters in: ${JSON.stringify(out)}`);
    assert.ok(out.includes("stop \\u001b]52;c;aGk=\\u0007\\u001b[2J"), out);
  }
});
