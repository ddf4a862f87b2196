// `fence drain` after the set's last worker crashed mid-task: the drain recovers the stalled task
// itself (no heartbeat is left to do it) and finishes.
import assert from "node:assert/strict";
import { startFlow } from "../../src/client/start_flow.ts";
import { freshDatabase } from "../_db.ts";
import { opsDone } from "./_ops.ts";

Deno.test("fence drain finishes after the last worker was SIGKILLed mid-task", async () => {
  await using db = await freshDatabase();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("../worker/_crash_worker.ts", import.meta.url).pathname, db.url],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  const readLine = async (line: string) => {
    while (!text.includes(`${line}\n`)) {
      const { value, done } = await lines.read();
      if (done) throw new Error("the worker subprocess exited early");
      text += value;
    }
  };
  let runId: string;
  try {
    await readLine("READY");
    runId = await startFlow(db.sql, "crashy", { n: 1 });
    await readLine(`STARTED ${runId} 1`);
  } finally {
    child.kill("SIGKILL");
    await child.status;
    await lines.cancel().catch(() => {});
  }
  const [{ function_name }] = await db.sql`select function_name from sluice.workers`;

  // The step's timeout is 5 s; the stall margin (sluice.stall_margin_seconds(), 30 s) is a
  // constant, so the test moves the crashed attempt and the last heartbeat back past both.
  await db.sql`update sluice.step_tasks set started_at = now() - interval '1 minute'`;
  await db.sql`update sluice.workers set last_heartbeat_at = now() - interval '1 minute'`;

  const drain = await opsDone(
    db,
    "fence",
    "drain",
    "--functions",
    function_name,
    "--timeout",
    "20s",
  );
  assert.equal(drain.code, 0, `${drain.out}\n${drain.err}`);
  assert.match(drain.out, /^Recovered 1 stalled tasks \(their worker vanished\)/m);
  assert.match(drain.out, /^Drained: no live worker and no started task in 1 worker functions\.$/m);
  const [task] = await db.sql`select status, attempts_count, requeued_count from sluice.step_tasks`;
  assert.deepEqual({ ...task }, { status: "queued", attempts_count: 1, requeued_count: 1 });
});
