/**
 * `deno task bench:flow_control [--runs 300] [--migrations DIR]`: what concurrency and rate limits
 * (docs/flow_control.md) cost per task, against the same flow without limits, and whether a limited
 * flow runs at its limit. See bench/README.md.
 *
 * 1. Cost per task, with a real `startWorker` worker and a no-op handler: `--runs` runs of one
 *    step, started in one statement, run to the end; WAL bytes, shared buffer accesses and
 *    statements (client and nested, from `pg_stat_statements`) per task. Rows: `off` (no limit),
 *    `concurrency` (a limit per run key that is never full: the holding, releasing and counting
 *    alone), `rate` (a rate limit per run key that is never reached). `--migrations DIR` adds an
 *    `off` row measured on another migrations directory (e.g. main's), the baseline of "limits off
 *    cost nothing".
 * 2. Throughput against the limit: a concurrency limit of 2 (one key) with a 20 ms handler, whose
 *    ceiling is 100 tasks/s, and a rate limit of 50 per second (one key).
 *
 * Always a throwaway cluster with `pg_stat_statements` and autovacuum off.
 *
 * @module
 */
import { parseArgs } from "node:util";
import postgres from "postgres";
import { compileFlow } from "../src/client/compile_flow.ts";
import { Flow } from "../src/dsl/flow.ts";
import { startWorker } from "../src/worker/mod.ts";
import { type BenchDatabase, benchDatabase } from "./_bench_database.ts";
import { type Cost, costMark, costSince } from "./_cost.ts";
import { loadAverage } from "./_machine.ts";
import { PROFILE_SETTINGS } from "./_pg_profile.ts";
import { markdownTable } from "./_stats.ts";

const { values: args } = parseArgs({
  args: Deno.args,
  options: { runs: { type: "string", default: "300" }, migrations: { type: "string" } },
});
const RUNS = Number(args.runs);

type Input = { key: string; n: number };
const noop = (input: Input) => input.n;
const sleepy = async (input: Input) => {
  await new Promise((resolve) => setTimeout(resolve, 20));
  return input.n;
};

const FLOWS = {
  off: new Flow<Input>({ slug: "fc_off" }).step({ slug: "work" }, noop),
  concurrency: new Flow<Input>({ slug: "fc_concurrency" })
    .step({ slug: "work", concurrency: { limit: 1_000_000, key: "key" } }, noop),
  rate: new Flow<Input>({ slug: "fc_rate" })
    .step({ slug: "work", rateLimit: { limit: 1_000_000, period: 1, key: "key" } }, noop),
  limit2: new Flow<Input>({ slug: "fc_limit2" })
    .step({ slug: "work", concurrency: { limit: 2 } }, sleepy),
  rate50: new Flow<Input>({ slug: "fc_rate50" })
    .step({ slug: "work", rateLimit: { limit: 50, period: 1 } }, noop),
};

interface Measured {
  cost: Cost;
  seconds: number;
}

/** Starts `runs` runs of `flow` (each its own key), runs them to the end with one worker. */
async function measure(
  db: BenchDatabase,
  flow: (typeof FLOWS)[keyof typeof FLOWS],
  runs: number,
  keys: "each" | "one",
): Promise<Measured> {
  const admin = postgres(db.url, { max: 1, prepare: false, onnotice: () => {} });
  try {
    await compileFlow(admin, flow);
    await admin`vacuum analyze`;
    const mark = await costMark(admin);
    const began = performance.now();
    await admin`
      select sluice.start_flow(${flow.slug},
        jsonb_build_object('key', case when ${keys} = 'each' then 'k' || i else 'one' end, 'n', i))
      from generate_series(1, ${runs}) as i`;
    const worker = await startWorker(flow, {
      connectionString: db.url,
      logLevel: "error",
      maxConcurrent: 10,
      heartbeatIntervalMs: 1000,
      // No stall sweep (nor its held-task sweep) inside the measurement, so that a baseline on
      // migrations without limits measures the same statements.
      stalledCheckIntervalMs: 600_000,
    });
    for (;;) {
      const [{ left }] = await admin<{ left: number }[]>`
        select count(*)::int as left from sluice.runs
        where flow_slug = ${flow.slug} and status = 'started'`;
      if (left === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const seconds = (performance.now() - began) / 1000;
    await worker.stop();
    return { cost: await costSince(admin, mark), seconds };
  } finally {
    await admin.end();
  }
}

function costRow(name: string, m: Measured, runs: number): string[] {
  return [
    name,
    String(Math.round(m.cost.walBytes / runs)),
    (m.cost.bufferAccesses / runs).toFixed(1),
    (m.cost.clientStatements / runs).toFixed(2),
    (m.cost.nestedStatements / runs).toFixed(1),
    String(Math.round(runs / m.seconds)),
  ];
}

const loadBefore = await loadAverage();
const settings = {
  ...PROFILE_SETTINGS,
  "pg_stat_statements.track_planning": "off",
  autovacuum: "off",
};
const rows: string[][] = [];
const throughput: string[][] = [];
let pgmq = "";
{
  await using db = await benchDatabase({ settings, throwaway: true });
  pgmq = db.pgmq;
  for (const name of ["off", "concurrency", "rate"] as const) {
    rows.push(costRow(name, await measure(db, FLOWS[name], RUNS, "each"), RUNS));
  }
  const limit2 = await measure(db, FLOWS.limit2, 100, "one");
  throughput.push([
    "concurrency limit 2, 20 ms handler",
    "100 tasks/s",
    `${Math.round(100 / limit2.seconds)} tasks/s`,
  ]);
  const rate50 = await measure(db, FLOWS.rate50, 150, "one");
  throughput.push([
    "rate limit 50 per 1 s",
    "50 tasks/s",
    `${Math.round(150 / rate50.seconds)} tasks/s`,
  ]);
}
if (args.migrations !== undefined) {
  await using db = await benchDatabase({ settings, throwaway: true, migrations: args.migrations });
  rows.push(costRow(`off (${args.migrations})`, await measure(db, FLOWS.off, RUNS, "each"), RUNS));
}

console.log(`bench:flow_control: ${RUNS} runs of one step per row, pgmq ${pgmq}`);
console.log(`load average: ${loadBefore} before, ${await loadAverage()} after\n`);
console.log("Cost per task (start, claim, completion; the worker's polls included):\n");
console.log(markdownTable(
  ["limits", "WAL bytes", "buffer accesses", "client statements", "nested statements", "tasks/s"],
  rows,
));
console.log(
  "\nThroughput of a limited flow against its limit (starts, worker and wait included):\n",
);
console.log(markdownTable(["flow", "limit", "measured"], throughput));
