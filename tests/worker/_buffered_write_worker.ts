// Subprocess of the buffered-write test: a worker whose handler queries PostgreSQL through sluice's
// client so that, on each of 4 connections, postgres.js sends a statement of 1 KiB or more from a
// query's continuation in the very turn of the event loop in which its immediate for a buffered
// short statement is due. Under Deno 2.5 without src/db/driver/cancellable_immediate.ts that immediate
// still runs and kills the process with `TypeError: May not write null values to stream`.
import { connect } from "../../src/db/connect.ts";
import { startWorker } from "../../src/worker/mod.ts";
import { blockEventLoop } from "../_support.ts";
import { bufferedWriteFlow } from "./_buffered_write_flow.ts";

const [url] = Deno.args;
const LONG = `select 1 as n /*${" ".repeat(1100)}*/`;

const flow = bufferedWriteFlow(async ({ rounds }) => {
  const clients = Array.from({ length: 4 }, () => connect(url, { max: 1 }));
  try {
    let sum = 0;
    for (let round = 0; round < rounds; round++) {
      // On every connection a query in flight whose continuation sends the long statement.
      const long = clients.map((sql) => sql`select pg_sleep(0.005)`.then(() => sql.unsafe(LONG)));
      // Deno orders timers by due time: the driver's immediates have written those queries.
      await new Promise((resolve) => setTimeout(resolve, 2));
      const short = clients.map((sql) => sql`select 2 as n`.execute());
      // postgres.js hands a query to its connection one microtask after execute(): the short
      // statements are now buffered behind setImmediate.
      await Promise.resolve();
      // The first answers arrive and the immediates fall due: one turn handles both.
      blockEventLoop(30);
      for (const rows of await Promise.all([...long, ...short])) sum += Number(rows[0].n);
    }
    return sum;
  } finally {
    await Promise.all(clients.map((sql) => sql.end()));
  }
});
await startWorker(flow, { connectionString: url, logLevel: "error", heartbeatIntervalMs: 100 });
console.log("READY");
