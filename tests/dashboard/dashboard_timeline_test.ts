// The run page's timeline (docs/dashboard.md#timeline): one lane per step and map task (a large
// map collapsed to its tasks together plus the telling ones), bars for queued time, attempts,
// earlier attempts with their backoff, a pending retry's backoff and waits, and cancel marks.
import assert from "node:assert/strict";
import { cancelRun } from "../../mod.ts";
import {
  type ClaimedTask,
  compileFlow,
  completeTask,
  failTask,
  readAndClaim,
  registerWorker,
  startFlow,
} from "../sql/_fixtures.ts";
import { freshDatabase } from "../_db.ts";
import { startWaitingRun, waitingFlow } from "../worker/_waiting_run.ts";
import { waitUntil } from "../worker/_helpers.ts";
import { browser, dashboard, IMAGES, NO_BROWSER, openRunPage } from "./_browser.ts";

const FLOW = {
  slug: "dash_times",
  maxAttempts: 3,
  baseDelay: 1,
  steps: [
    { slug: "fetch" },
    { slug: "items", type: "map" as const, deps: ["fetch"], mapSource: "fetch" },
    { slug: "summary", deps: ["items"] },
  ],
};

/** Each lane's bars (kind and tooltip) by lane id, and the page's and the SVG's geometry. */
const LANES = `(() => {
  const svg = document.querySelector("svg.timeline");
  const box = svg.getBoundingClientRect();
  const lanes = [...svg.querySelectorAll("g.lane")].map((g) => ({
    lane: g.dataset.lane,
    label: g.querySelector(".lane-label").textContent,
    bars: [...g.querySelectorAll("rect.bar")].map((r) => {
      const b = r.getBoundingClientRect();
      return { kind: r.dataset.kind, cls: r.getAttribute("class"),
        title: r.querySelector("title").textContent, left: b.left, right: b.right };
    }),
    cancels: g.querySelectorAll("line.cancel").length,
  }));
  return { lanes, left: box.left, right: box.right, innerWidth,
    scrollWidth: document.documentElement.scrollWidth, runEnd: svg.querySelectorAll("line.run-end").length };
})()`;

interface Lanes {
  lanes: {
    lane: string;
    label: string;
    bars: { kind: string; cls: string; title: string; left: number; right: number }[];
    cancels: number;
  }[];
  left: number;
  right: number;
  innerWidth: number;
  scrollWidth: number;
  runEnd: number;
}

Deno.test({
  name:
    "dashboard run timeline shows attempts, a retry's backoff, earlier attempts, a collapsed 12-task map and the cancel, fitting the page",
  ignore: NO_BROWSER,
  async fn() {
    await using db = await freshDatabase();
    await compileFlow(db.sql, FLOW);
    const workerId = await registerWorker(db.sql, FLOW.slug, FLOW.slug, "dash-times");
    const claim = () => readAndClaim(db.sql, FLOW.slug, workerId, FLOW.slug);
    const runId = await startFlow(db.sql, FLOW.slug, {});
    const [fetch] = await claim();
    await completeTask(db.sql, fetch, Array.from({ length: 12 }, (_, i) => i));
    const items = await claim();
    assert.equal(items.length, 12);
    for (const task of items.slice(0, 10)) await completeTask(db.sql, task, task.task_index);
    // Tasks 10 and 11 fail once (the policy's backoff: 1 s), come back, 11 completes, 10 fails again.
    for (const task of items.slice(10)) {
      assert.equal(await failTask(db.sql, task, `upstream 50${task.task_index % 10}`), "retried");
    }
    const again = await waitUntil(async () => {
      const tasks: ClaimedTask[] = await claim();
      return tasks.length > 0 ? tasks : null;
    }, "the retries visible");
    const more = again.length === 2 ? [] : await waitUntil(async () => {
      const tasks = await claim();
      return tasks.length > 0 ? tasks : null;
    }, "the second retry visible");
    const byIndex = new Map([...again, ...more].map((task) => [task.task_index, task]));
    await completeTask(db.sql, byIndex.get(11)!, 11);
    assert.equal(await failTask(db.sql, byIndex.get(10)!, "upstream 500 <again>"), "retried");

    await using server = dashboard(db);
    await using chromium = await browser();
    const page = await openRunPage(chromium, server, runId);
    const shown = await page.evaluate<Lanes>(LANES);
    assert.ok(shown.scrollWidth <= shown.innerWidth, `no horizontal scroll: ${shown.scrollWidth}`);
    assert.ok(shown.right <= shown.innerWidth);
    const lanes = Object.fromEntries(shown.lanes.map((lane) => [lane.lane, lane]));
    assert.deepEqual(
      shown.lanes.map((lane) => lane.lane),
      ["fetch", "items/*", "items/10", "items/11", "summary"],
      "a 12-task map collapses to its tasks together and the two retried ones",
    );
    assert.equal(lanes["items/*"].label, "items · 12 tasks");
    assert.deepEqual(lanes.fetch.bars.map((bar) => bar.kind), ["queued", "attempt"]);
    assert.match(lanes.fetch.bars[1].cls, /s-completed/);
    assert.match(lanes["items/*"].bars[1].title, /11\/12 done/);
    const [earlier, backoff] = lanes["items/10"].bars;
    assert.deepEqual(lanes["items/10"].bars.map((bar) => bar.kind), ["retries", "backoff"]);
    assert.match(earlier.title, /1 earlier retries after 1\.0s/);
    assert.match(
      backoff.title,
      /attempt 2 .*failed: upstream 500 <again>; retry after 2\.0s backoff/,
    );
    assert.deepEqual(lanes["items/11"].bars.map((bar) => bar.kind), ["retries", "attempt"]);
    assert.match(
      lanes["items/11"].bars[0].title,
      /1 earlier attempt failed, retried after 1\.0s backoff/,
    );
    assert.match(lanes["items/11"].bars[1].title, /attempt 2 completed/);
    assert.deepEqual(lanes.summary.bars, [], "not queued yet");
    // On the axis, a map task's bars follow the fetch attempt, and every bar lies in the SVG.
    assert.ok(lanes["items/11"].bars[1].left >= lanes.fetch.bars[1].right - 1);
    for (const lane of shown.lanes) {
      for (const bar of lane.bars) {
        assert.ok(bar.left >= shown.left - 0.5 && bar.right <= shown.right + 0.5, bar.title);
      }
    }
    assert.equal(shown.runEnd, 0, "the run goes on");
    await page.screenshot(new URL("dashboard_timeline.png", IMAGES).pathname);

    // A cancel arrives live: a cancel mark and the run's end.
    assert.equal((await cancelRun(db.sql, runId, { reason: "test" })).outcome, "cancelled");
    await page.waitFor(
      `document.querySelector('svg.timeline g.lane[data-lane="run"] line.cancel') !== null`,
      "the cancel on the timeline",
    );
    const after = await page.evaluate<Lanes>(LANES);
    assert.equal(after.runEnd, 1);
  },
});

Deno.test("dashboard run timeline draws a signal wait and a sleep as waits", async () => {
  await using db = await freshDatabase();
  const { worker, runId } = await startWaitingRun(db, waitingFlow("dash_tl_waits"), "t1");
  await using _worker = worker;
  await using server = dashboard(db);
  const html = await (await fetch(`${server.root}/runs/${runId}`, {
    headers: { authorization: `Bearer ${server.token}` },
  })).text();
  const lane = (id: string) =>
    new RegExp(`<g class="lane" data-lane="${id}">[\\s\\S]*?</g>`).exec(html)?.[0] ?? "";
  assert.match(lane("decision"), />decision \(signal\)</);
  assert.match(lane("decision"), /data-kind="wait"/);
  assert.match(lane("decision"), /for signal &quot;approval:t1&quot;/);
  assert.match(lane("pause"), />pause \(sleep\)</);
  assert.match(lane("pause"), /class="bar wait s-waiting"/);
  assert.match(lane("ask"), /data-kind="attempt"/);
});
