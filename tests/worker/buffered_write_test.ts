// A worker process survives postgres.js flushing a buffered write early (Deno 2.5's clearImmediate
// gap, src/db/driver/cancellable_immediate.ts): before the fix the process died from an uncaught
// `TypeError: May not write null values to stream` thrown in a timer.
import assert from "node:assert/strict";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { freshDatabase } from "../_db.ts";
import { lineReader, scaled } from "../_support.ts";
import { bufferedWriteFlow } from "./_buffered_write_flow.ts";

Deno.test("a worker survives long statements sent in the turn in which a buffered write is due", async () => {
  await using db = await freshDatabase();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("./_buffered_write_worker.ts", import.meta.url).pathname, db.url],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const lines = lineReader(child.stdout);
  let exited: Deno.CommandStatus | undefined;
  const status = child.status.then((s) => exited = s);
  try {
    assert.equal(await lines.next(), "READY");
    const runId = await startFlow(db.sql, "buffered_writes", { rounds: 5 });
    const flow = bufferedWriteFlow(() => Promise.resolve(0));
    const output = await Promise.race([
      waitForRun(db.sql, runId, { timeoutMs: scaled(60_000), flow }),
      status.then(async (s) => {
        throw new Error(`the worker process exited (${s.code}):\n${await stderr}`);
      }),
    ]);
    // 5 rounds x 4 connections x (1 + 2)
    assert.deepEqual(output, { interleave: 60 });
    assert.equal(exited, undefined, "the worker process is still running");
  } finally {
    if (exited === undefined) child.kill("SIGTERM");
    await status;
    await stderr;
  }
});
