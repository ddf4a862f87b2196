// Batch sizes checked in SQL (issue 43 finding 7): sluice.release_due_waits and
// sluice.fire_due_schedules refuse a zero, negative, null or over-large batch with an error naming
// the value, before they release or fire anything (they used to clamp it silently to 1).
import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";

const BAD_SIZES = [0, -1, -2147483648, 10001, null];

/** The batch-size entry points, each as a call taking the size. */
const ENTRY_POINTS: Record<string, string> = {
  release_due_waits: "select sluice.release_due_waits($1::integer)",
  fire_due_schedules: "select * from sluice.fire_due_schedules(now(), $1::integer)",
};

for (const [name, statement] of Object.entries(ENTRY_POINTS)) {
  Deno.test(`${name} refuses a bad batch size, naming it`, async () => {
    await using db = await freshDatabase();
    for (const size of BAD_SIZES) {
      await assert.rejects(
        db.sql.unsafe(statement, [size]),
        (error: Error & { code?: string }) => {
          assert.equal(error.code, "22023", `${name}(${size}): ${error.message}`);
          assert.match(error.message, new RegExp(`got ${size === null ? "null" : size}$`));
          assert.match(error.message, /must be from 1 to 10000, got/);
          return true;
        },
      );
    }
    // The bounds themselves are accepted.
    await db.sql.unsafe(statement, [1]);
    await db.sql.unsafe(statement, [10000]);
  });
}
