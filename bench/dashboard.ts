/**
 * `deno task bench:dashboard [--repeat N]`: how fast the dashboard's run page of a 1,000-task map
 * run is, for a completed run (the map's 1,000-element output on the page) and one in flight
 * (1,000 tasks queued, the live script connecting). Per page: the server's answer (`fetch` of
 * the whole HTML, database reads and rendering included) and a headless Chromium's load (navigate
 * to the load event). Prints a table of medians and 95th percentiles with the load average.
 *
 * Uses the server at DATABASE_URL when set (creating and dropping a database of its own), else a
 * throwaway cluster; Chromium as the dashboard tests find it (dev/chromium.ts).
 *
 * @module
 */
import { parseArgs } from "node:util";
import postgres from "postgres";
import { findChromium, launchChromium } from "../dev/chromium.ts";
import { startDashboard } from "../src/dashboard/mod.ts";
import { benchDatabase } from "./_bench_database.ts";
import { loadAverage } from "./_machine.ts";
import { compileWorkload, openConnections, runRepetition } from "./_sql_core_driver.ts";
import { mapWorkload } from "./_sql_core_flows.ts";
import { duration, markdownTable, median, quantile } from "./_stats.ts";

const WIDTH = 1000;

const { values } = parseArgs({ args: Deno.args, options: { repeat: { type: "string" } } });
const repeat = Number(values.repeat ?? "20");
if (!Number.isInteger(repeat) || repeat < 1) {
  throw new RangeError(
    `--repeat must be a whole number from 1, got ${JSON.stringify(values.repeat)}`,
  );
}
const chromium = findChromium();
if (chromium === null) {
  throw new Error("Cannot run bench:dashboard: no Chromium found; apt-get install chromium");
}

console.error(`bench:dashboard: ${WIDTH}-task map runs, ${repeat} loads per figure`);
const loadBefore = await loadAverage();
await using db = await benchDatabase();
const workload = mapWorkload(`map${WIDTH}`, WIDTH);
const sql = postgres(db.url, { max: 4, prepare: false, onnotice: () => {} });
try {
  await compileWorkload(sql, workload);
  {
    await using connections = await openConnections(db.url, 2, workload, db.local);
    await runRepetition(connections, workload, "batched", 1, 100);
  }
  const [{ run_id: completedRun }] = await sql<{ run_id: string }[]>`
    select run_id from sluice.runs where status = 'completed'`;
  // In flight: the fan step completed, its 1,000 map tasks queued.
  const [{ run_id: startedRun }] = await sql<{ run_id: string }[]>`
    select sluice.start_flow(${workload.shape}, '{}'::jsonb) as run_id`;
  const workerId = crypto.randomUUID();
  await sql`select sluice.register_worker(${workerId}::uuid, 'bench', ${workload.queue},
    ${workload.shape}, null)`;
  const [message] = await sql<{ msg_id: string }[]>`
    select msg_id from pgmq.read(${workload.queue}, 30, 1)`;
  const [{ claim }] = await sql<{ claim: { tasks: { attempt: number }[] } }[]>`
    select sluice.start_tasks(${workload.queue}, ${`{${message.msg_id}}`}::bigint[],
      ${workerId}::uuid, ${sql.json(workload.supported)}::jsonb) as claim`;
  await sql`select sluice.complete_task(${startedRun}::uuid, 'fan', 0, ${
    claim.tasks[0].attempt
  }, ${workerId}::uuid, ${sql.json(Array.from({ length: WIDTH }, (_, i) => i))}::jsonb)`;

  await using dashboard = startDashboard(sql, { port: 0, log: () => {} });
  await using browser = await launchChromium(chromium);
  const page = await browser.newPage();
  await page.goto(dashboard.url);

  const rows: string[][] = [];
  for (const [label, runId] of [["completed", completedRun], ["in flight", startedRun]]) {
    const url = `${dashboard.root}/runs/${runId}`;
    const server: number[] = [];
    let bytes = 0;
    for (let i = 0; i < repeat; i++) {
      const started = performance.now();
      const response = await fetch(url, {
        headers: { authorization: `Bearer ${dashboard.token}` },
      });
      bytes = (await response.arrayBuffer()).byteLength;
      server.push(performance.now() - started);
      if (response.status !== 200) throw new Error(`Cannot load ${url}: ${response.status}`);
    }
    const browserLoad: number[] = [];
    for (let i = 0; i < repeat; i++) {
      await page.goto("about:blank");
      browserLoad.push(await page.goto(url));
    }
    const nodes = await page.evaluate<number>(`document.querySelectorAll("svg.dag g.node").length`);
    if (nodes !== 3) throw new Error(`Cannot measure ${label}: the DAG has ${nodes} nodes, not 3`);
    rows.push([
      label,
      `${Math.round(bytes / 1024)} KiB`,
      duration(median(server)),
      duration(quantile(server, 0.95)),
      duration(median(browserLoad)),
      duration(quantile(browserLoad, 0.95)),
    ]);
  }
  console.log(`${WIDTH}-task map run page, ${repeat} loads each; ${db.server}, pgmq ${db.pgmq}`);
  console.log(`load average (1, 5, 15 min): ${loadBefore} before, ${await loadAverage()} after`);
  console.log(markdownTable(
    ["run", "page size", "server p50", "server p95", "browser load p50", "browser load p95"],
    rows,
  ));
} finally {
  await sql.end();
}
