import assert from "node:assert/strict";
import {
  type ClaimedTask,
  compileFlow,
  completeTask,
  failTask,
  read,
  readAndClaim,
  registerWorker,
  startFlow,
  startTasks,
} from "../sql/_fixtures.ts";
import { freshDatabase } from "../_db.ts";
import { browser, dashboard, IMAGES, NO_BROWSER, openRunPage } from "./_browser.ts";

/** The hostile error text: it must show as text and never run. */
const HOSTILE = `<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">`;

/** A flow with a fetch step, a map over its output, a conditional branch and a final step. */
const RUN_FLOW = {
  slug: "dash_orders",
  steps: [
    { slug: "fetch" },
    { slug: "items", type: "map" as const, deps: ["fetch"], mapSource: "fetch" },
    { slug: "audit", deps: ["fetch"], if: { audit: true } },
    { slug: "summary", deps: ["items"] },
  ],
};

/** Claims what is visible on the flow's queue and returns it by step. */
async function claim(
  sql: Parameters<typeof readAndClaim>[0],
  workerId: string,
): Promise<ClaimedTask[]> {
  return await readAndClaim(sql, RUN_FLOW.slug, workerId, RUN_FLOW.slug);
}

Deno.test({
  name:
    "dashboard overview lists a paused function and a missing route; clearing the pause asks and is logged",
  ignore: NO_BROWSER,
  async fn() {
    await using db = await freshDatabase();
    await compileFlow(db.sql, {
      slug: "dash_digest",
      queueMode: "step",
      steps: [{ slug: "fetch_posts" }, { slug: "classify", deps: ["fetch_posts"] }],
    });
    // A worker of classify only: fetch_posts has no live worker.
    const workerId = crypto.randomUUID();
    await db.sql`select sluice.track_worker_function('dash-digest--classify')`;
    await db.sql`select sluice.register_worker(${workerId}, 'dash-digest--classify',
      'dash_digest__classify', 'dash_digest', 'classify')`;
    // Another function meets work it does not support: its restart pauses.
    const strayWorker = await registerWorker(
      db.sql,
      "dash_digest__fetch_posts",
      "dash_digest",
      "dash-stray",
    );
    await startFlow(db.sql, "dash_digest", {});
    const [message] = await read(db.sql, "dash_digest__fetch_posts", 1, 0);
    const claimed = await startTasks(
      db.sql,
      "dash_digest__fetch_posts",
      [message.msg_id],
      strayWorker,
      [],
    );
    assert.equal(claimed.outcome, "fatal");
    await db.sql`select sluice.stop_worker(${strayWorker})`;

    await using server = dashboard(db);
    await using chromium = await browser();
    const page = await chromium.newPage();
    await page.goto(server.url);

    assert.equal(await page.evaluate("location.search"), "", "the token leaves the address bar");
    const paused = await page.evaluate<string>(
      `document.querySelector('#functions tr[data-function="dash-stray"]').textContent`,
    );
    assert.match(paused, /paused since/);
    assert.match(paused, /unsupported work on queue "dash_digest__fetch_posts"/);
    const missing = await page.evaluate<string>(
      `document.querySelector('#coverage tr[data-route="dash_digest.fetch_posts"]').textContent`,
    );
    assert.match(missing, /MISSING/);
    const covered = await page.evaluate<string>(
      `document.querySelector('#coverage tr[data-route="dash_digest.classify"]').textContent`,
    );
    assert.doesNotMatch(covered, /MISSING/);
    await page.screenshot(new URL("dashboard_overview.png", IMAGES).pathname);

    // Clear the pause: a confirmation page first, nothing changed yet.
    await page.evaluate(
      `document.querySelector('tr[data-function="dash-stray"] form[action="actions/clear-pause"]').submit()`,
    );
    await page.waitFor(`document.querySelector("#question")`, "the confirmation page");
    assert.match(
      await page.evaluate<string>(`document.querySelector("#question").textContent`),
      /Clear the restart pause of worker function "dash-stray"\?/,
    );
    const [before] = await db.sql`
      select restart_paused_at from sluice.worker_functions where function_name = 'dash-stray'`;
    assert.notEqual(before.restart_paused_at, null);
    await page.evaluate(`document.querySelector("#confirm").click()`);
    await page.waitFor(`document.querySelector("#result")`, "the result page");
    assert.equal(
      await page.evaluate<string>(`document.querySelector("#result").textContent`),
      'Cleared the restart pause of worker function "dash-stray".',
    );
    const [after] = await db.sql`
      select restart_paused_at from sluice.worker_functions where function_name = 'dash-stray'`;
    assert.equal(after.restart_paused_at, null);
    assert.equal(server.log.length, 1);
    assert.match(
      server.log[0],
      /dashboard action clear-pause "dash-stray" from 127\.0\.0\.1: Cleared the restart pause/,
    );
  },
});

Deno.test({
  name:
    "dashboard run page draws the DAG with each step's state and follows the run to completed without a reload",
  ignore: NO_BROWSER,
  async fn() {
    await using db = await freshDatabase();
    await compileFlow(db.sql, RUN_FLOW);
    const workerId = await registerWorker(db.sql, RUN_FLOW.slug, RUN_FLOW.slug, "dash-orders");
    const runId = await startFlow(db.sql, RUN_FLOW.slug, { audit: false, note: "x".repeat(200) });
    const [fetch] = await claim(db.sql, workerId);
    await completeTask(db.sql, fetch, [10, 20, 30, 40]);
    // Three of four items done; the fourth failed once and waits for its retry.
    const items = await claim(db.sql, workerId);
    assert.deepEqual(items.map((task) => task.step_slug), ["items", "items", "items", "items"]);
    for (const task of items.slice(0, 3)) await completeTask(db.sql, task, task.task_index * 2);
    assert.equal(await failTask(db.sql, items[3], "upstream timed out", 0), "retried");

    await using server = dashboard(db);
    await using chromium = await browser();
    const page = await openRunPage(chromium, server, runId);
    const nodes = () =>
      page.evaluate<Record<string, string>>(
        `Object.fromEntries([...document.querySelectorAll("svg.dag g.node")].map((node) =>
          [node.dataset.step, node.dataset.status + " | " + node.querySelector(".label").textContent]))`,
      );
    assert.deepEqual(await nodes(), {
      fetch: "completed | completed",
      items: "started | started · 3/4",
      audit: "skipped | skipped · condition unmet",
      summary: "created | created",
    });
    const cells = await page.evaluate<string[]>(
      `[...document.querySelector('#steps tr[data-step="items"]').cells].map((cell) => cell.textContent)`,
    );
    assert.equal(cells[2], "started");
    assert.equal(cells[3], "3/4 done, 1 queued");
    assert.equal(cells[4], "4", "one attempt per task so far; the retry waits");
    assert.equal(cells[7], "upstream timed out");
    assert.equal(
      await page.evaluate(`document.querySelector("#run-status").dataset.status`),
      "started",
    );
    await page.screenshot(new URL("dashboard_run.png", IMAGES).pathname);

    // Finish the run while the page stays open: it must follow without a reload.
    await page.evaluate(`window.__sameDocument = true`);
    const [retry] = await claim(db.sql, workerId);
    await completeTask(db.sql, retry, 6);
    const [summary] = await claim(db.sql, workerId);
    assert.equal(summary.step_slug, "summary");
    await completeTask(db.sql, summary, { total: 12 });

    await page.waitFor(
      `document.querySelector("#run-status").dataset.status === "completed"`,
      "the run page to show completed",
    );
    assert.equal(await page.evaluate("window.__sameDocument"), true, "the page was not reloaded");
    assert.deepEqual(await nodes(), {
      fetch: "completed | completed",
      items: "completed | completed · 4/4",
      audit: "skipped | skipped · condition unmet",
      summary: "completed | completed",
    });
    await page.waitFor(
      `document.querySelector("#live").textContent === "finished"`,
      "the stream end",
    );
  },
});

Deno.test({
  name: "dashboard shows a hostile error text as inert text, on load and in a live update",
  ignore: NO_BROWSER,
  async fn() {
    await using db = await freshDatabase();
    await compileFlow(db.sql, { slug: "dash_hostile", maxAttempts: 1, steps: [{ slug: "boom" }] });
    const workerId = await registerWorker(db.sql, "dash_hostile", "dash_hostile", "dash-hostile");
    const runId = await startFlow(db.sql, "dash_hostile", { html: HOSTILE });

    await using server = dashboard(db);
    await using chromium = await browser();
    const page = await openRunPage(chromium, server, runId);

    const [task] = await readAndClaim(db.sql, "dash_hostile", workerId, "dash_hostile");
    assert.equal(await failTask(db.sql, task, HOSTILE), "failed");
    await page.waitFor(
      `document.querySelector("#run-status").dataset.status === "failed"`,
      "the live update to failed",
    );
    const inert = async () => {
      // The CSP would stop the payload's script running anyway, so the check is on the markup:
      // anywhere in the document, no image and no script but the page's own module script.
      assert.deepEqual(
        await page.evaluate(
          `[...document.querySelectorAll("img, script:not([type=module])")].map((e) => e.outerHTML)`,
        ),
        [],
      );
      assert.ok(
        await page.evaluate<number>(`document.querySelectorAll("script").length`) <= 1,
        "only the page's own script",
      );
      const row = await page.evaluate<string>(
        `document.querySelector('#steps tr[data-step="boom"] .last-error').textContent`,
      );
      assert.ok(row.endsWith(HOSTILE), `the error shows as text: ${row}`);
      assert.match(
        await page.evaluate<string>(`document.querySelector("#summary").textContent`),
        /<script>window/,
      );
    };
    await inert();
    // A fresh load renders the same error on the server.
    await page.goto(`${server.root}/runs/${runId}`);
    await inert();
  },
});

Deno.test({
  name:
    "dashboard cookie stays with its base path: a server on another loopback port never receives the token",
  ignore: NO_BROWSER,
  async fn() {
    await using db = await freshDatabase();
    await compileFlow(db.sql, { slug: "dash_cookie", steps: [{ slug: "only" }] });
    await using server = dashboard(db);
    const base = new URL(server.root).pathname;
    // Another server on the same host, another port: it records every request it gets.
    const seen: { url: string; headers: [string, string][] }[] = [];
    await using other = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
      seen.push({ url: request.url, headers: [...request.headers] });
      return new Response("<!doctype html><title>other</title><p>other server</p>", {
        headers: { "content-type": "text/html" },
      });
    });
    const otherOrigin = `http://127.0.0.1:${(other.addr as Deno.NetAddr).port}`;
    await using chromium = await browser();
    const page = await chromium.newPage();
    await page.goto(server.url);
    assert.equal(await page.evaluate("location.pathname"), `${base}/`);
    assert.equal(await page.evaluate("location.search"), "", "the token leaves the address bar");
    // The cookie authenticates, and the pages' relative links stay under the base path.
    await page.evaluate(`document.querySelector('header a[href="runs"]').click()`);
    await page.waitFor(`location.pathname === ${JSON.stringify(`${base}/runs`)}`, "the runs page");
    await page.waitFor(
      `document.querySelector("form.filters") !== null`,
      "the runs page's filters",
    );
    await page.goto(`${server.root}/flows/dash_cookie`);
    assert.match(await page.evaluate<string>("document.body.textContent"), /Runs of this flow/);

    for (const path of ["/", "/runs", `/flows/dash_cookie`, "/?token=x"]) {
      await page.goto(`${otherOrigin}${path}`);
      assert.equal(await page.evaluate("document.title"), "other");
    }
    assert.equal(seen.length >= 4, true, `the other server saw the navigations: ${seen.length}`);
    for (const request of seen) {
      for (const [name, value] of request.headers) {
        assert.ok(
          !value.includes(server.token),
          `${request.url} received the token in ${name}: ${value}`,
        );
        assert.ok(!value.includes(base), `${request.url} learned the base path in ${name}`);
      }
      assert.equal(request.headers.find(([name]) => name === "cookie"), undefined, request.url);
    }
    // The dashboard still knows the browser: the cookie was there all along.
    await page.goto(`${server.root}/`);
    assert.match(await page.evaluate<string>("document.title"), /Overview/);
  },
});
