/**
 * `deno task bench:community_threads [--quick] [...]`: the measurements of
 * docs/integration/community_threads.md. First the code each version of
 * examples/community_threads needs for orchestration (files, lines, direct PGMQ references),
 * then, per version, a flood of threads to classify while the urgent ones among them are
 * delivered to the Slack stand-in: how long an alert waits once its thread is classified
 * (classified -> alerted) and end to end (created -> alerted), with the load average.
 *
 * Options:
 *   --quick                   smoke run: 500 threads
 *   --threads 5000            threads in the flood
 *   --urgent-every 25         every n-th thread is urgent (4 %)
 *   --classify-delay-ms 20    the classifier's stand-in LLM latency
 *   --slack-latency-ms 30     the Slack stand-in's answer latency
 *   --workers 2               worker processes per step
 *   --concurrency 10          messages or tasks per worker at once
 *   --versions baseline,sluice
 *
 * Uses the server at DATABASE_URL when set (creating and dropping a database of its own), else a
 * throwaway cluster per version.
 *
 * @module
 */
import { parseArgs } from "node:util";
import postgres from "postgres";
import { App, makeThreads, type Version } from "../examples/community_threads/dev/harness.ts";
import { startSlackStandIn } from "../examples/community_threads/dev/slack_stand_in.ts";
import { setupDatabase } from "../examples/community_threads/setup.ts";
import { benchDatabase } from "./_bench_database.ts";
import {
  BASELINE_ORCHESTRATION,
  type CodeCount,
  countCode,
  SHARED_DOMAIN,
  SLUICE_GENERATED,
  SLUICE_ORCHESTRATION,
} from "./_community_threads_code.ts";
import { loadAverage } from "./_machine.ts";
import { duration, markdownTable, median, quantile, whole } from "./_stats.ts";

/** Threads run through before the flood, then `vacuum analyze` (see bench/starvation.ts). */
const WARM_UP_THREADS = 100;

interface Settings {
  readonly threads: number;
  readonly urgentEvery: number;
  readonly classifyDelayMs: number;
  readonly slackLatencyMs: number;
  readonly workers: number;
  readonly concurrency: number;
}

interface Measurement {
  readonly version: Version;
  readonly server: string;
  readonly urgent: number;
  readonly drainMs: number;
  readonly deliveryMs: number[];
  readonly endToEndMs: number[];
  readonly outcomes: string;
  readonly duplicates: number;
  readonly loadBefore: string;
  readonly loadAfter: string;
}

async function measure(
  version: Version,
  settings: Settings,
): Promise<Measurement> {
  const loadBefore = await loadAverage();
  await using db = await benchDatabase();
  const sql = postgres(db.url, { prepare: false, max: 8, onnotice: () => {} });
  try {
    await setupDatabase(sql);
    await using slack = startSlackStandIn({
      latencyMs: settings.slackLatencyMs,
    });
    await using app = new App({
      version,
      databaseUrl: db.url,
      sql,
      slackUrl: slack.url,
      env: {
        CLASSIFY_DELAY_MS: String(settings.classifyDelayMs),
        WORKER_CONCURRENCY: String(settings.concurrency),
        SLACK_TIMEOUT_MS: "5000",
      },
    });
    await Promise.all([
      app.startWorkers("classify", settings.workers),
      app.startWorkers("deliver_slack", settings.workers),
    ]);
    const warmUp = await app.submit(
      makeThreads(WARM_UP_THREADS, settings.urgentEvery),
      4,
    );
    await app.waitForTerminal(warmUp, 120_000);
    await sql`vacuum analyze`;

    const started = performance.now();
    const ids = await app.submit(
      makeThreads(settings.threads, settings.urgentEvery),
      4,
    );
    await app.waitForTerminal(ids, 30 * 60_000);
    const drainMs = performance.now() - started;

    const rows = await sql<{ delivery_ms: number; end_to_end_ms: number }[]>`
      select extract(epoch from a.at - c.at) * 1000 as delivery_ms,
        extract(epoch from a.at - t.created_at) * 1000 as end_to_end_ms
      from public.threads t
      join public.thread_transitions c on c.thread_id = t.id and c.to_status = 'classified'
      join public.thread_transitions a on a.thread_id = t.id and a.to_status = 'alerted'
      where t.id = any(${ids}::int[])
    `;
    const statuses = await sql<{ status: string; count: number }[]>`
      select status, count(*)::int as count from public.threads
      where id = any(${ids}::int[]) group by status order by status
    `;
    const alerted = statuses.find((s) => s.status === "alerted")?.count ?? 0;
    const flooded = new Set(ids);
    const accepted = slack.accepted().filter((post) => flooded.has(post.threadId)).length;
    return {
      version,
      server: `${db.server}, PGMQ ${db.pgmq}`,
      urgent: Math.ceil(settings.threads / settings.urgentEvery),
      drainMs,
      deliveryMs: rows.map((r) => Number(r.delivery_ms)),
      endToEndMs: rows.map((r) => Number(r.end_to_end_ms)),
      outcomes: statuses.map((s) => `${s.status} ${whole(s.count)}`).join(", "),
      duplicates: accepted - alerted,
      loadBefore,
      loadAfter: await loadAverage(),
    };
  } finally {
    await sql.end();
  }
}

function codeTable(counts: CodeCount[]): string {
  return markdownTable(
    [
      "code",
      "files",
      "non-blank lines",
      "code lines (no comments)",
      "direct `pgmq.` references",
      "direct `sluice.` SQL calls",
    ],
    counts.map((c) => [
      c.label,
      String(c.files),
      String(c.lines),
      String(c.codeLines),
      String(c.pgmqReferences),
      String(c.sluiceSqlReferences),
    ]),
  );
}

function latencyTable(settings: Settings, results: Measurement[]): string {
  const p = (values: number[], q: number) => duration(quantile(values, q));
  return markdownTable(
    [
      "version",
      "threads (urgent)",
      "workers per step × concurrency",
      "drain time",
      "threads/s",
      "delivery: classified -> alerted p50 / p95",
      "urgent end to end: created -> alerted p50 / p95",
      "outcomes",
      "duplicate alerts",
      "load average before -> after",
    ],
    results.map((r) => [
      r.version,
      `${whole(settings.threads)} (${whole(r.urgent)})`,
      `${settings.workers} × ${settings.concurrency}`,
      duration(r.drainMs),
      whole(settings.threads / (r.drainMs / 1000)),
      `${duration(median(r.deliveryMs))} / ${p(r.deliveryMs, 0.95)}`,
      `${duration(median(r.endToEndMs))} / ${p(r.endToEndMs, 0.95)}`,
      r.outcomes,
      String(r.duplicates),
      `${r.loadBefore} -> ${r.loadAfter}`,
    ]),
  );
}

function parseSettings(
  args: string[],
): { settings: Settings; versions: Version[] } {
  const { values } = parseArgs({
    args,
    options: {
      quick: { type: "boolean", default: false },
      threads: { type: "string" },
      "urgent-every": { type: "string", default: "25" },
      "classify-delay-ms": { type: "string", default: "20" },
      "slack-latency-ms": { type: "string", default: "30" },
      workers: { type: "string", default: "2" },
      concurrency: { type: "string", default: "10" },
      versions: { type: "string", default: "baseline,sluice" },
    },
  });
  const count = (name: string, value: string, min: number) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min) {
      throw new RangeError(
        `Cannot run the benchmark: --${name} must be an integer >= ${min}, got "${value}"`,
      );
    }
    return n;
  };
  const versions = values.versions.split(",") as Version[];
  for (const version of versions) {
    if (version !== "baseline" && version !== "sluice") {
      throw new RangeError(
        `Cannot run the benchmark: unknown version "${version}" in --versions`,
      );
    }
  }
  return {
    versions,
    settings: {
      threads: count(
        "threads",
        values.threads ?? (values.quick ? "500" : "5000"),
        1,
      ),
      urgentEvery: count("urgent-every", values["urgent-every"], 1),
      classifyDelayMs: count(
        "classify-delay-ms",
        values["classify-delay-ms"],
        0,
      ),
      slackLatencyMs: count("slack-latency-ms", values["slack-latency-ms"], 0),
      workers: count("workers", values.workers, 1),
      concurrency: count("concurrency", values.concurrency, 1),
    },
  };
}

if (import.meta.main) {
  const { settings, versions } = parseSettings(Deno.args);
  const counts = await Promise.all(
    [
      BASELINE_ORCHESTRATION,
      SLUICE_ORCHESTRATION,
      SLUICE_GENERATED,
      SHARED_DOMAIN,
    ].map(countCode),
  );
  console.log("Orchestration code of examples/community_threads\n");
  console.log(codeTable(counts));
  const results: Measurement[] = [];
  const failures: string[] = [];
  for (const version of versions) {
    console.error(`bench: ${version}: ${whole(settings.threads)} threads ...`);
    try {
      results.push(await measure(version, settings));
    } catch (error) {
      // A version that fails (a worker process died) is a result too; the other still runs.
      failures.push(`${version}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  console.log(
    `\nFlood: ${
      whole(settings.threads)
    } threads, every ${settings.urgentEvery}th urgent; classifier ` +
      `${settings.classifyDelayMs} ms, Slack ${settings.slackLatencyMs} ms; ` +
      `${navigator.hardwareConcurrency} CPUs; ${results[0]?.server ?? ""}\n`,
  );
  console.log(latencyTable(settings, results));
  for (const failure of failures) console.log(`\nFAILED ${failure}`);
  if (failures.length > 0) Deno.exitCode = 1;
}
