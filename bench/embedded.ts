/**
 * `deno task bench:embedded [--runs 50] [--latency-runs 10] [--starts 3]`: how fast the embedded
 * database (PGlite in this process, dev/embedded_postgres.ts) starts with sluice installed, and
 * throughput and idle latency of one real worker on it next to a throwaway PostgreSQL server, for
 * a linear flow of three no-op steps. Prints tables with the load average.
 *
 * Start: migrating a new database from scratch (what every start did before the snapshot), the
 * first start that migrates and saves the snapshot, and `--starts` starts from the snapshot
 * (median): wall time, this process's CPU time and the bytes it wrote (`wchar` of
 * `/proc/self/io`), the last two independent of what else the machine runs.
 *
 * Throughput: `--runs` runs started at once, runs completed per second until the last one is.
 * Idle latency: `--latency-runs` runs one after another on an idle worker, from `startFlow` to
 * `waitForRun` seeing the run completed (median and max).
 *
 * @module
 */
import { parseArgs } from "node:util";
import { connect, Flow, startFlow, startWorker, waitForRun } from "../mod.ts";
import { migrate } from "../src/migrations/migrate.ts";
import { startEmbeddedPostgres } from "../dev/embedded_postgres.ts";
import { startEmbeddedSluice } from "../src/embedded/embedded_sluice.ts";
import { startTempPostgres } from "../dev/temp_postgres.ts";
import { loadAverage, processCpuMs } from "./_machine.ts";
import { markdownTable, median } from "./_stats.ts";

const args = parseArgs({
  args: Deno.args,
  options: {
    runs: { type: "string", default: "50" },
    "latency-runs": { type: "string", default: "10" },
    starts: { type: "string", default: "3" },
  },
});
const STARTS = Number(args.values.starts);
const RUNS = Number(args.values.runs);
const LATENCY_RUNS = Number(args.values["latency-runs"]);

const flow = new Flow<{ n: number }>({ slug: "bench_embedded" })
  .step({ slug: "a" }, (input) => input.n)
  .step({ slug: "b", dependsOn: ["a"] }, (deps) => deps.a)
  .step({ slug: "c", dependsOn: ["b"] }, (deps) => deps.b);

// Polling the runs, the same on both databases, so the figures compare the databases.
const WAIT = { timeoutMs: 120_000, pollIntervalMs: 5, maxPollIntervalMs: 5, flow, listen: false };

/**
 * Measures one database with the same worker on both: it wakes on NOTIFY, which the embedded
 * bridge delivers too.
 */
async function measure(url: string) {
  const sql = connect(url, { max: 4 });
  try {
    await migrate(sql);
    const worker = await startWorker(flow, {
      connectionString: url,
      poolSize: 4,
      maxConcurrent: 10,
      logger: () => {},
    });
    try {
      // Warm-up.
      await waitForRun(sql, await startFlow(sql, flow, { n: 0 }), WAIT);
      const started = performance.now();
      const ids = await Promise.all(
        Array.from({ length: RUNS }, (_, n) => startFlow(sql, flow, { n })),
      );
      for (const id of ids) await waitForRun(sql, id, WAIT);
      const throughput = RUNS / ((performance.now() - started) / 1000);
      const latencies: number[] = [];
      for (let i = 0; i < LATENCY_RUNS; i++) {
        // Idle: the worker has found the queue empty and waits for its next read.
        await new Promise((resolve) => setTimeout(resolve, 200));
        const t = performance.now();
        await waitForRun(sql, await startFlow(sql, flow, { n: i }), WAIT);
        latencies.push(performance.now() - t);
      }
      return { throughput, latencies };
    } finally {
      await worker.stop();
    }
  } finally {
    await sql.end();
  }
}

/** Bytes this process has written so far (files and sockets). */
async function bytesWritten(): Promise<number> {
  const io = await Deno.readTextFile("/proc/self/io");
  return Number(io.match(/^wchar: (\d+)$/m)![1]);
}

/** Wall time, CPU time and bytes written of `start` (which returns the database to stop). */
async function measureStart(start: () => Promise<{ stop(): Promise<void> }>) {
  const [cpu, bytes, wall] = [
    await processCpuMs(["self"]),
    await bytesWritten(),
    performance.now(),
  ];
  const db = await start();
  const figures = {
    wallMs: performance.now() - wall,
    cpuMs: (await processCpuMs(["self"]))! - cpu!,
    bytes: (await bytesWritten()) - bytes,
  };
  await db.stop();
  return figures;
}

const startLoad = await loadAverage();
const cacheDir = await Deno.makeTempDir({ prefix: "sluice-bench-embedded-" });
const startRows: string[][] = [];
const startRow = (label: string, figures: { wallMs: number; cpuMs: number; bytes: number }) =>
  startRows.push([
    label,
    `${(figures.wallMs / 1000).toFixed(2)} s`,
    `${(figures.cpuMs / 1000).toFixed(2)} s`,
    `${(figures.bytes / 1e6).toFixed(1)} MB`,
  ]);
// Warm-up: compiling PGlite's WebAssembly is a cost of the process, not of a start.
await (await startEmbeddedPostgres()).stop();
try {
  startRow(
    "migrate from scratch (before: every start)",
    await measureStart(async () => {
      const db = await startEmbeddedPostgres();
      const sql = connect(db.url, { max: 1 });
      await migrate(sql);
      await sql.end();
      return db;
    }),
  );
  startRow(
    "first start: migrate, save the snapshot",
    await measureStart(() => startEmbeddedSluice({ cacheDir })),
  );
  const warm = [];
  for (let i = 0; i < STARTS; i++) {
    warm.push(await measureStart(() => startEmbeddedSluice({ cacheDir })));
  }
  startRow(`from the snapshot (median of ${STARTS})`, {
    wallMs: median(warm.map((f) => f.wallMs)),
    cpuMs: median(warm.map((f) => f.cpuMs)),
    bytes: median(warm.map((f) => f.bytes)),
  });
} finally {
  await Deno.remove(cacheDir, { recursive: true });
}
console.log(`embedded start with sluice installed; load average before: ${startLoad}\n`);
console.log(markdownTable(["start", "wall", "CPU (this process)", "written"], startRows));
console.log(`\nload average after: ${await loadAverage()}\n`);

const rows: string[][] = [];
for (const mode of ["embedded", "server"] as const) {
  const db = mode === "embedded" ? await startEmbeddedPostgres() : await startTempPostgres();
  try {
    const { throughput, latencies } = await measure(db.url);
    rows.push([
      mode === "embedded" ? "embedded (PGlite, in process)" : "server (throwaway PostgreSQL)",
      throughput.toFixed(1),
      `${Math.round(median(latencies))} ms`,
      `${Math.round(Math.max(...latencies))} ms`,
    ]);
  } finally {
    await db.stop();
  }
}
console.log(
  `linear3, 1 worker (maxConcurrent 10, pool 4), ${RUNS} runs, ${LATENCY_RUNS} idle-latency runs; ` +
    `load average before: ${await loadAverage()}\n`,
);
console.log(markdownTable(["database", "runs/s", "idle latency p50", "idle latency max"], rows));
console.log(`\nload average after: ${await loadAverage()}`);
