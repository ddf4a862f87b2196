// Run inputs and step outputs in the PostgreSQL log (docs/sql.md#payloads-in-the-server-log): the
// hot-path statements inline their values, so a failed one is logged with `STATEMENT:` carrying
// the payload; `log_min_error_statement = panic`, the documented operator setting, keeps it out.
// Replays the producer's and the worker's own statements (src/db) with a marker string.
import assert from "node:assert/strict";
import { dirname } from "node:path";
import { startFlowRun } from "../../src/db/client_queries.ts";
import { completeTasks } from "../../src/db/worker_queries.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { waitUntil } from "../_support.ts";

/** The throwaway cluster's log file (dev/temp_postgres.ts writes it beside the data directory). */
async function serverLog(db: TestDatabase): Promise<string> {
  const [{ setting }] = await db.sql`select setting from pg_settings where name = 'data_directory'`;
  return await Deno.readTextFile(`${dirname(setting)}/server.log`);
}

/** The two payload-carrying statements a failure is plausible on, each failing in SQL. */
async function failBoth(sql: TestDatabase["sql"], marker: string): Promise<void> {
  await assert.rejects(
    startFlowRun(sql, {
      flowRef: "no_such_flow",
      concrete: true,
      inputJson: JSON.stringify({ card: `input-${marker}` }),
      runId: undefined,
    }),
    /Cannot start flow "no_such_flow": no such flow/,
  );
  await assert.rejects(
    completeTasks(sql, [{
      runId: crypto.randomUUID(),
      stepSlug: "nope",
      taskIndex: 0,
      attempt: 1,
      workerId: crypto.randomUUID(),
      outputJson: JSON.stringify({ card: `output-${marker}` }),
    }]),
    /no such task/,
  );
}

Deno.test("a failed start or completion logs its payload by default, and not with log_min_error_statement = panic", async () => {
  await using db = await freshDatabase();
  const logged = `logged_${crypto.randomUUID()}`;
  const hidden = `hidden_${crypto.randomUUID()}`;
  const sentinel = `sentinel_${crypto.randomUUID()}`;

  // Default settings: the statement text, payload included, follows the error.
  await failBoth(db.sql, logged);
  await waitUntil(async () => {
    const log = await serverLog(db);
    return log.includes(`output-${logged}`) ? log : null;
  }, "the default statement log");
  const log = await serverLog(db);
  assert.match(log, new RegExp(`STATEMENT: .*input-${logged}`));

  // The operator setting (here for one session; ALTER ROLE ... SET in production).
  const quiet = db.connect(1);
  await quiet`set log_min_error_statement = panic`;
  await failBoth(quiet, hidden);
  // A later failure on the default connection: once it is in the log, so is everything before.
  await failBoth(db.sql, sentinel);
  await waitUntil(async () => {
    const text = await serverLog(db);
    return text.includes(`output-${sentinel}`) ? text : null;
  }, "the sentinel failure");
  const after = await serverLog(db);
  assert.ok(after.includes("no such flow"), "the errors themselves are still logged");
  assert.ok(!after.includes(hidden), "no payload of the quiet session is in the log");
  await quiet.end();
});
