// The DAG fits the page (layers in columns, wrapping into bands, scaled to the width) and wait
// steps show as waits: no queue, attempts or timeout on the flow page, and their queues not
// listed as if no worker served them.
import assert from "node:assert/strict";
import { Flow, withStepQueues } from "../../mod.ts";
import { compileFlow } from "../../src/client/compile_flow.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { freshDatabase } from "../_db.ts";
import { uniqueSlug } from "../worker/_helpers.ts";
import { browser, dashboard, IMAGES, NO_BROWSER } from "./_browser.ts";

/** Nine steps in a chain with a fan-out of six after the first, a sleep and a signal wait. */
function longFlow() {
  return new Flow<{ id: string }>({ slug: uniqueSlug("dash_long") })
    .step({ slug: "fetch" }, (input) => input)
    .step({ slug: "parse", dependsOn: ["fetch"] }, () => [1, 2])
    .step({ slug: "enrich_geo", dependsOn: ["fetch"] }, () => 1)
    .step({ slug: "enrich_price", dependsOn: ["fetch"] }, () => 1)
    .step({ slug: "enrich_stock", dependsOn: ["fetch"] }, () => 1)
    .step({ slug: "enrich_tax", dependsOn: ["fetch"] }, () => 1)
    .step({ slug: "enrich_vendor", dependsOn: ["fetch"] }, () => 1)
    .map({ slug: "lines", array: "parse" }, (n) => n)
    .step({ slug: "merge", dependsOn: ["lines", "enrich_geo", "enrich_tax"] }, () => 1)
    .waitForSignal({ slug: "approval", dependsOn: ["merge"], key: (deps) => `ok:${deps.merge}` })
    .step({ slug: "invoice", dependsOn: ["approval"] }, () => 1)
    .sleep({ slug: "cool_off", dependsOn: ["invoice"] }, () => ({ seconds: 60 }))
    .step({ slug: "notify", dependsOn: ["cool_off"] }, () => 1)
    .step({ slug: "archive", dependsOn: ["notify", "enrich_price"] }, () => 1);
}

/** What the page's geometry says: its scroll width, and every node's box inside the SVG's. */
const GEOMETRY = `(() => {
  const svg = document.querySelector("svg.dag").getBoundingClientRect();
  const nodes = [...document.querySelectorAll("svg.dag g.node")].map((g) => {
    const r = g.getBoundingClientRect();
    return { step: g.dataset.step, left: r.left, right: r.right, top: r.top, bottom: r.bottom };
  });
  return { scrollWidth: document.documentElement.scrollWidth, innerWidth, svg: { left: svg.left,
    right: svg.right, top: svg.top, bottom: svg.bottom }, nodes };
})()`;

interface Geometry {
  scrollWidth: number;
  innerWidth: number;
  svg: { left: number; right: number; top: number; bottom: number };
  nodes: { step: string; left: number; right: number; top: number; bottom: number }[];
}

function assertFits(geometry: Geometry, width: number) {
  assert.equal(geometry.innerWidth, width);
  assert.ok(geometry.scrollWidth <= width, `no horizontal scroll: ${geometry.scrollWidth}`);
  assert.ok(geometry.svg.right <= width, `the graph ends inside the page: ${geometry.svg.right}`);
  for (const node of geometry.nodes) {
    assert.ok(
      node.left >= geometry.svg.left - 0.5 && node.right <= geometry.svg.right + 0.5 &&
        node.top >= geometry.svg.top - 0.5 && node.bottom <= geometry.svg.bottom + 0.5,
      `${node.step} lies inside the graph: ${JSON.stringify(node)}`,
    );
  }
}

Deno.test({
  name:
    "dashboard flow page lays a 14-step flow out in wrapped layers that fit the page, wait steps drawn and listed as waits",
  ignore: NO_BROWSER,
  async fn() {
    await using db = await freshDatabase();
    const flow = withStepQueues(longFlow());
    await compileFlow(db.sql, flow);
    const slug = flow.flow.slug;
    await using server = dashboard(db);
    await using chromium = await browser();
    for (const width of [1280, 800]) {
      const page = await chromium.newPage(width, 900);
      await page.goto(server.url);
      await page.goto(`${server.root}/flows/${slug}`);
      const geometry = await page.evaluate<Geometry>(GEOMETRY);
      assertFits(geometry, width);
      assert.equal(geometry.nodes.length, 14);
      const at = Object.fromEntries(geometry.nodes.map((node) => [node.step, node]));
      // Layers: a dependent lies right of its dependency within a band, below it across bands.
      assert.ok(at.parse.left > at.fetch.right, "parse is one column right of fetch");
      assert.equal(Math.round(at.enrich_geo.left), Math.round(at.parse.left), "one column");
      assert.ok(at.merge.left > at.lines.right);
      // Nine layers deep, five to a band: invoice (the sixth layer) begins the second band.
      assert.ok(at.invoice.top > at.enrich_vendor.bottom, "the sixth layer wraps below");
      assert.ok(at.invoice.left < at.parse.left, "and starts at the left again");
      if (width === 1280) {
        // Unscaled at the default width: the nodes keep their size.
        assert.equal(Math.round(at.fetch.right - at.fetch.left), 180);
        await page.screenshot(new URL("dashboard_flow.png", IMAGES).pathname);
      }
    }

    // A run's page: the same graph with states, and the timeline, fit too.
    const runId = await startFlow(db.sql, flow, { id: "r1" });
    for (const width of [1280, 800]) {
      const page = await chromium.newPage(width, 900);
      await page.goto(server.url);
      await page.goto(`${server.root}/runs/${runId}`);
      const geometry = await page.evaluate<Geometry>(GEOMETRY);
      assertFits(geometry, width);
      assert.equal(geometry.nodes.length, 14);
      const timeline = await page.evaluate<number>(
        `document.querySelector("svg.timeline").getBoundingClientRect().right`,
      );
      assert.ok(timeline <= width, `the timeline ends inside the page: ${timeline}`);
    }

    const page = await chromium.newPage();
    await page.goto(`${server.root}/flows/${slug}`);
    const waits = await page.evaluate<Record<string, string>>(
      `Object.fromEntries([...document.querySelectorAll("svg.dag g.node[data-wait]")].map((g) =>
        [g.dataset.step, g.querySelector(".label").textContent]))`,
    );
    assert.deepEqual(waits, { approval: "wait · signal", cool_off: "wait · sleep" });
    const row = (step: string) =>
      page.evaluate<string[]>(
        `[...document.querySelector('#flow-steps tr[data-step="${step}"]').cells].map((c) => c.textContent)`,
      );
    const approval = await row("approval");
    assert.ok(approval.includes("wait: no task, no worker"), approval.join(" | "));
    assert.ok(!approval.some((cell) => /\(flow\)/.test(cell)), "no max attempts or timeout");
    assert.ok((await row("invoice")).some((cell) => cell === "3 (flow)"), "a task step has them");
    const queues = await page.evaluate<string[]>(
      `[...document.querySelectorAll("#flow-queues tr[data-queue]")].map((r) => r.dataset.queue)`,
    );
    assert.equal(queues.length, 12, `the twelve task steps' queues: ${queues}`);
    assert.ok(!queues.some((q) => q.endsWith("__approval") || q.endsWith("__cool_off")));

    // The overview lists every queue; a wait step's says it needs no worker.
    await page.goto(`${server.root}/`);
    const waitQueue = await page.evaluate<string>(
      `[...document.querySelectorAll("#queues tr[data-queue]")]
        .find((r) => r.dataset.queue.endsWith("__approval")).textContent`,
    );
    assert.match(waitQueue, /wait steps only: no worker needed/);
    const taskQueue = await page.evaluate<string>(
      `[...document.querySelectorAll("#queues tr[data-queue]")]
        .find((r) => r.dataset.queue.endsWith("__invoice")).lastElementChild.textContent`,
    );
    assert.equal(taskQueue, "0");
  },
});
