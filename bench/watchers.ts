/**
 * `deno task bench:watchers [--watchers 10000] [--runs 1000]`: how many connections concurrent
 * `waitForRun()` calls of one process hold. The runs are started with no worker, every watcher
 * attaches, the connections of the watchers' pool are counted in `pg_stat_activity`, then a worker
 * finishes the runs and every watcher must resolve. See bench/README.md.
 *
 * Options:
 *   --watchers 10000  concurrent waitForRun() calls, spread evenly over the runs
 *   --runs 1000       runs of a one-step flow
 *   --pool-max 4      max of the watchers' connect() pool
 *
 * Uses the server at DATABASE_URL when set (creating and dropping a database of its own), else a
 * throwaway cluster.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { compileFlow } from "../src/client/compile_flow.ts";
import { startFlow } from "../src/client/start_flow.ts";
import { waitForRun } from "../src/client/wait_for_run.ts";
import { connect } from "../src/db/connect.ts";
import { Flow } from "../src/dsl/flow.ts";
import { startWorker } from "../src/worker/mod.ts";
import { benchDatabase } from "./_bench_database.ts";
import { loadAverage } from "./_machine.ts";
import { duration, markdownTable, whole } from "./_stats.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    watchers: { type: "string", default: "10000" },
    runs: { type: "string", default: "1000" },
    "pool-max": { type: "string", default: "4" },
  },
});
const watchers = Number(values.watchers);
const runs = Number(values.runs);
const poolMax = Number(values["pool-max"]);
for (const [name, value] of [["watchers", watchers], ["runs", runs], ["pool-max", poolMax]]) {
  if (!Number.isInteger(value) || (value as number) < 1) {
    throw new RangeError(`Cannot run bench:watchers: --${name} must be an integer >= 1`);
  }
}

const log = (line: string) => console.error(`bench:watchers: ${line}`);
await using db = await benchDatabase();
log(`database ready: ${db.server}, PGMQ ${db.pgmq}`);
const flow = new Flow<number>({ slug: "watched" }).step({ slug: "double" }, (n) => n * 2);
const admin = connect(db.url, { max: 2, applicationName: "bench_admin" });
const pool = connect(db.url, { max: poolMax, applicationName: "bench_watchers" });
const connections = async () => {
  const [{ n }] = await admin<{ n: number }[]>`
    select count(*)::int as n from pg_stat_activity where application_name = 'bench_watchers'`;
  return n;
};
try {
  await compileFlow(admin, flow);
  const runIds: string[] = [];
  for (let i = 0; i < runs; i++) runIds.push(await startFlow(admin, flow, i));
  const attachStart = performance.now();
  const waits = Array.from(
    { length: watchers },
    (_, i) => waitForRun(pool, runIds[i % runs], { timeoutMs: 300_000 }),
  );
  let failures = 0;
  const settled = Promise.all(waits.map((wait) => wait.catch(() => failures++)));
  // Attached: every run's channel is LISTENed (the shared session's list is one per pool).
  let peak = 0;
  for (let i = 0; i < 20; i++) {
    peak = Math.max(peak, await connections());
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const attachedMs = performance.now() - attachStart;
  const load = await loadAverage();
  const worker = await startWorker(flow, {
    connectionString: db.url,
    maxConcurrent: 20,
    logLevel: "warn",
    env: {},
  });
  const finishStart = performance.now();
  let settledFlag = false;
  const sampling = (async () => {
    while (true) {
      peak = Math.max(peak, await connections());
      if (settledFlag) return;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  })();
  await settled;
  settledFlag = true;
  await sampling;
  const finishedMs = performance.now() - finishStart;
  await worker.stop();
  console.log(markdownTable(
    [
      "watchers",
      "runs",
      "pool max",
      "peak connections",
      "attach + 2 s",
      "finish",
      "failures",
      "load",
    ],
    [[
      whole(watchers),
      whole(runs),
      String(poolMax),
      String(peak),
      duration(attachedMs),
      duration(finishedMs),
      String(failures),
      load,
    ]],
  ));
} finally {
  await pool.end();
  await admin.end();
}
