// Subprocess of the connect() pool cut test: a worker on a pool from sluice's own connect(), the
// documented pattern, or (with "producer") a producer on such a pool starting runs until killed.
import { connect } from "../../src/db/connect.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { startWorker } from "../../src/worker/mod.ts";
import { Flow } from "../../src/dsl/flow.ts";

const [url, role, count] = Deno.args;
const sql = connect(url, { applicationName: `cut-${role}` });
if (role === "producer") {
  console.log("READY");
  let started = 0;
  while (started < Number(count)) {
    // A cut can lose the answer of a start that committed: each run has its own id, so a retry
    // finds it instead of starting a second one.
    const runId = crypto.randomUUID();
    for (;;) {
      try {
        await startFlow(sql, "cuts", { n: started }, { runId });
        break;
      } catch {
        const found = await sql`select 1 from sluice.runs where run_id = ${runId}`.catch(() => []);
        if (found.length > 0) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    started++;
  }
  console.log("PRODUCED");
  // Stays up (a timer keeps the event loop alive) until the test kills it.
  setInterval(() => {}, 60_000);
} else {
  // A cut can lose a claim's answer after the claim committed: that task waits for stall
  // recovery (timeout + 30 s), so a short timeout keeps it within the test's wait.
  const flow = new Flow<{ n: number }>({ slug: "cuts", timeout: 5 })
    .step({ slug: "a" }, async (input) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return input.n;
    });
  // Warnings too: an outage streak and its recovery are what a failed run needs to be read.
  await startWorker(flow, { sql, logLevel: "warn", heartbeatIntervalMs: 100 });
  console.log("READY");
}
