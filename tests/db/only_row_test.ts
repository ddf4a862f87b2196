// onlyRow: a statement's one row, or a transient EmptyResultError when the result holds none.
import assert from "node:assert/strict";
import { EmptyResultError, onlyRow } from "../../src/db/only_row.ts";
import { isTransientDatabaseError } from "../../src/db/transient_error.ts";

Deno.test("onlyRow returns the first row", () => {
  assert.deepEqual(onlyRow("requeue_stalled_tasks", [{ handled: 2 }]), { handled: 2 });
});

Deno.test("onlyRow throws a transient EmptyResultError for an empty result", () => {
  assert.throws(() => onlyRow("requeue_stalled_tasks", []), (error: unknown) => {
    assert.ok(error instanceof EmptyResultError);
    assert.ok(isTransientDatabaseError(error));
    return true;
  });
});

Deno.test("onlyRow throws EmptyResultError for a result whose length claims a row it does not hold", () => {
  // What a worker met when a connection was terminated under requeue_stalled_tasks: it logged
  // "Cannot read properties of undefined (reading 'handled')" as a non-transient error.
  const cutShort = new Array<{ handled: number }>(1);
  assert.throws(() => onlyRow("requeue_stalled_tasks", cutShort), (error: unknown) => {
    assert.ok(error instanceof EmptyResultError);
    assert.equal(error.operation, "requeue_stalled_tasks");
    assert.ok(isTransientDatabaseError(error));
    return true;
  });
});
