// The flow page's last hour (docs/dashboard.md#last-hour): runs finished and tasks completed
// per minute, p95 run and task durations, from the runs and tasks of the flow; no queue-depth
// history, said so.
import assert from "node:assert/strict";
import {
  compileFlow,
  completeTask,
  failTask,
  readAndClaim,
  registerWorker,
  startFlow,
} from "../sql/_fixtures.ts";
import { freshDatabase } from "../_db.ts";
import { browser, dashboard, IMAGES, NO_BROWSER } from "./_browser.ts";

const SLUG = "dash_rate";

/** Each chart's maximum and its minutes' tooltips, and whether it lies inside the page. */
const CHARTS =
  `(() => Object.fromEntries([...document.querySelectorAll("figure.chart")].map((f) => {
  const box = f.getBoundingClientRect();
  return [f.dataset.chart, {
    max: Number(f.dataset.max),
    minutes: [...f.querySelectorAll("g.minute title")].map((t) => t.textContent),
    bars: f.querySelectorAll("g.minute rect:not(.hit)").length,
    line: f.querySelector("polyline")?.getAttribute("points").split(" ").length ?? 0,
    inside: box.left >= 0 && box.right <= innerWidth,
  }];
})))()`;

interface Charts {
  [id: string]: { max: number; minutes: string[]; bars: number; line: number; inside: boolean };
}

Deno.test({
  name:
    "dashboard flow page charts the last hour: runs and tasks per minute, p95 durations, and says queue depth has no history",
  ignore: NO_BROWSER,
  async fn() {
    await using db = await freshDatabase();
    await compileFlow(db.sql, { slug: SLUG, maxAttempts: 1, steps: [{ slug: "only" }] });
    const workerId = await registerWorker(db.sql, SLUG, SLUG, "dash-rate");
    // Twelve runs, one of five failing; then each is moved back k × 5 minutes (k = 0..11 by
    // run), lasting k + 1 seconds: a spread over the hour without waiting for it.
    const runIds: string[] = [];
    for (let k = 0; k < 12; k++) {
      runIds.push(await startFlow(db.sql, SLUG, { k }));
      const [task] = await readAndClaim(db.sql, SLUG, workerId, SLUG);
      if (k % 5 === 4) assert.equal(await failTask(db.sql, task, "boom"), "failed");
      else assert.equal(await completeTask(db.sql, task, k), "completed");
    }
    for (const [k, runId] of runIds.entries()) {
      await db.sql`
        update sluice.step_tasks set
          queued_at = queued_at - make_interval(mins => ${k * 5}, secs => ${k + 1}),
          started_at = started_at - make_interval(mins => ${k * 5}, secs => ${k + 1}),
          completed_at = completed_at - make_interval(mins => ${k * 5}),
          failed_at = failed_at - make_interval(mins => ${k * 5})
        where run_id = ${runId}`;
      await db.sql`
        update sluice.runs set
          started_at = started_at - make_interval(mins => ${k * 5}, secs => ${k + 1}),
          completed_at = completed_at - make_interval(mins => ${k * 5}),
          failed_at = failed_at - make_interval(mins => ${k * 5})
        where run_id = ${runId}`;
    }
    // A run finished 61 minutes ago is outside the hour.
    const old = await startFlow(db.sql, SLUG, {});
    const [task] = await readAndClaim(db.sql, SLUG, workerId, SLUG);
    await completeTask(db.sql, task, 0);
    await db.sql`update sluice.runs set started_at = started_at - interval '61 minutes',
      completed_at = completed_at - interval '61 minutes' where run_id = ${old}`;

    await using server = dashboard(db);
    await using chromium = await browser();
    const page = await chromium.newPage();
    await page.goto(server.url);
    await page.goto(`${server.root}/flows/${SLUG}`);
    assert.equal(
      await page.evaluate(`document.querySelector("#last-hour-totals").textContent`),
      "10 runs completed, 2 failed, 10 tasks completed in the last hour (by the minute they ended).",
    );
    const charts = await page.evaluate<Charts>(CHARTS);
    assert.deepEqual(Object.keys(charts), ["runs", "tasks", "run-p95", "task-p95"]);
    for (const [id, chart] of Object.entries(charts)) {
      assert.equal(chart.minutes.length, 60, `${id}: a value per minute`);
      assert.ok(chart.inside, `${id} lies inside the page`);
    }
    // The twelve runs ended in twelve distinct minutes, one each.
    assert.equal(charts.runs.max, 1);
    assert.equal(charts.runs.bars, 12);
    assert.equal(charts.tasks.bars, 10);
    const failed = charts.runs.minutes.filter((title) => title.endsWith("completed 0, failed 1"));
    assert.equal(failed.length, 2);
    // A minute's p95 of one run is its duration, k + 1 seconds and the real few milliseconds;
    // the longest completed one is k = 11's (11 % 5 is not 4): 12 s. Ten completed: ten points.
    assert.equal(charts["run-p95"].line, 10);
    assert.ok(
      charts["run-p95"].max >= 12 && charts["run-p95"].max < 13,
      `${charts["run-p95"].max}`,
    );
    assert.ok(charts["run-p95"].minutes.some((title) => /: p95 12\.\ds$/.test(title)));
    assert.ok(charts["task-p95"].minutes.some((title) => /: p95 12\.\ds$/.test(title)));
    assert.match(
      await page.evaluate<string>(`document.querySelector("#queue-depth-history").textContent`),
      /Queue depth history: not recorded/,
    );
    assert.ok(
      await page.evaluate<number>("document.documentElement.scrollWidth") <= 1280,
      "no horizontal scroll",
    );
    await page.screenshot(new URL("dashboard_flow_charts.png", IMAGES).pathname);
  },
});
