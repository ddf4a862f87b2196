// The schedules page (docs/dashboard.md): every schedule with its flow, cron and time zone, next
// fire (late ones marked), last fire with its run, and whether it is paused.
import assert from "node:assert/strict";
import { Flow } from "../../mod.ts";
import { compileFlow } from "../../src/client/compile_flow.ts";
import { fireDueSchedules, pauseSchedule, schedule } from "../../src/client/schedules.ts";
import { freshDatabase } from "../_db.ts";
import { uniqueSlug, waitUntil } from "../worker/_helpers.ts";
import { browser, dashboard, IMAGES, NO_BROWSER } from "./_browser.ts";

Deno.test({
  name:
    "dashboard schedules page lists each schedule's flow, cron, next and last fire and state, a late tick marked",
  ignore: NO_BROWSER,
  async fn() {
    await using db = await freshDatabase();
    const report = new Flow<{ kind: string }>({ slug: uniqueSlug("report") })
      .step({ slug: "build" }, (input) => input.kind);
    await compileFlow(db.sql, report);
    // Every second: fired once here, by the call every worker's heartbeat makes.
    await schedule(db.sql, report, {
      name: "every_second",
      cron: "* * * * * *",
      input: { kind: "s" },
    });
    await waitUntil(async () => (await fireDueSchedules(db.sql)).fired > 0, "a tick fired");
    await schedule(db.sql, report, {
      name: "nightly",
      cron: "0 3 * * *",
      timezone: "Europe/Berlin",
      input: { kind: "daily" },
      missed: "skip",
    });
    assert.equal(await pauseSchedule(db.sql, "nightly"), true);
    // No worker fires it: its tick is five minutes overdue.
    await schedule(db.sql, report, { name: "stuck", cron: "*/10 * * * *", input: { kind: "x" } });
    await db.sql`update sluice.schedules set next_due_at = now() - interval '5 minutes'
      where schedule_name = 'stuck'`;

    await using server = dashboard(db);
    await using chromium = await browser();
    const page = await chromium.newPage();
    await page.goto(server.url);
    await page.evaluate(`document.querySelector('header a[href="schedules"]').click()`);
    await page.waitFor(`document.querySelector("#schedules") !== null`, "the schedules page");
    const rows = await page.evaluate<Record<string, { cells: string[]; alert: boolean }>>(
      `Object.fromEntries([...document.querySelectorAll("#schedules tr[data-schedule]")].map((r) =>
        [r.dataset.schedule, { cells: [...r.cells].map((c) => c.innerText), alert: r.classList.contains("alert") }]))`,
    );
    assert.deepEqual(Object.keys(rows), ["every_second", "nightly", "stuck"]);
    const [name, flow, cron, next, last, state, missed] = rows.every_second.cells;
    assert.equal(name, "every_second");
    assert.equal(flow, report.slug);
    assert.equal(cron, "* * * * * *\nUTC");
    assert.match(next, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\n(in \d|\d+ms late|\d.*s late)/);
    assert.match(last, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\nrun (started|completed)$/);
    assert.equal(state, "enabled");
    assert.equal(missed, "run-once");
    assert.equal(rows.every_second.alert, false);
    assert.match(rows.nightly.cells[2], /0 3 \* \* \*\nEurope\/Berlin/);
    assert.equal(rows.nightly.cells[3], "paused");
    assert.equal(rows.nightly.cells[4], "never");
    assert.match(rows.nightly.cells[5], /^paused since \d{4}-/);
    assert.equal(rows.nightly.cells[6], "skip");
    assert.equal(rows.stuck.alert, true);
    assert.match(rows.stuck.cells[3], /\n5m \d+s late: is any worker running\?$/);
    // The last run links to its page; the flow to the flow page.
    const links = await page.evaluate<string[]>(
      `[...document.querySelectorAll('#schedules tr[data-schedule="every_second"] a')].map((a) => a.getAttribute("href"))`,
    );
    assert.equal(links[0], `flows/${report.slug}`);
    assert.match(links[1], /^runs\/[0-9a-f-]{36}$/);
    assert.ok(
      await page.evaluate<number>("document.documentElement.scrollWidth") <= 1280,
      "no horizontal scroll",
    );
    await page.screenshot(new URL("dashboard_schedules.png", IMAGES).pathname);
  },
});
