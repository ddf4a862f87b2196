// The dashboard's signals page (docs/dashboard.md): kept signals with their state, age and the
// steps waiting on their key, linked from the navigation, filtered by key, run and state; its form
// sends a signal that releases a waiting step (logged); bad filters, bad payloads, reused ids and
// foreign origins are refused and change nothing. Keys are the application's text: escaped.
import assert from "node:assert/strict";
import { sendSignal } from "../../mod.ts";
import { getRun } from "../../src/client/get_run.ts";
import { freshDatabase } from "../_db.ts";
import { waitUntil } from "../worker/_helpers.ts";
import { startWaitingRun, waitingFlow } from "../worker/_waiting_run.ts";
import { browser, dashboard, IMAGES, NO_BROWSER } from "./_browser.ts";

/** Markup in a key: it must show as text. */
const key = (id: string) => `approval <b>${id}</b>`;

Deno.test({
  name:
    "dashboard signals page lists pending, released and expired signals and sends one that releases a waiting step",
  ignore: NO_BROWSER,
  async fn() {
    await using db = await freshDatabase();
    const { worker, runId } = await startWaitingRun(db, waitingFlow("dash_signals", key), "r1");
    await using _worker = worker;
    await sendSignal(db.sql, { key: key("r0"), payload: { approved: true }, signalId: "typo" });
    await db.sql`insert into sluice.signals (signal_id, signal_key, payload, sent_at, expires_at)
      values ('old', 'approval:r9', '"late"', now() - interval '8 days', now() - interval '1 day')`;

    await using server = dashboard(db);
    await using chromium = await browser();
    const page = await chromium.newPage();
    await page.goto(server.url);
    await page.evaluate(`document.querySelector('header a[href="signals"]').click()`);
    await page.waitFor(`document.querySelector("#send")`, "the signals page");
    const rows = () =>
      page.evaluate<string[][]>(
        `[...document.querySelectorAll("#signals tr[data-signal]")].map((row) =>
          [row.dataset.signal, ...[...row.cells].slice(1, 5).map((cell) => cell.textContent)])`,
      );
    const listed = await rows();
    assert.deepEqual(listed.map((row) => [row[0], row[1], row[2], row[4]]), [
      ["typo", "approval <b>r0</b>", "pending", "0"],
      ["old", "approval:r9", "expired", "0"],
    ]);
    assert.match(listed[1][3], /^192h 0m$/);
    assert.equal(
      await page.evaluate(`document.querySelector("#signals b")`),
      null,
      "the key's markup is text",
    );
    assert.match(
      await page.evaluate<string>(`document.querySelector('tr[data-signal="typo"]').textContent`),
      /kept until \d{4}-\d\d-\d\d [\d:]+Z[\s\S]*\{"approved":true\}/,
    );

    // Send the right key from the form: the waiting step completes.
    await page.evaluate(`(() => {
      const form = document.querySelector("#send");
      form.key.value = ${JSON.stringify(key("r1"))};
      form.signal_id.value = "decision-r1";
      form.payload.value = "true";
      document.querySelector("#send-signal").click();
    })()`);
    await page.waitFor(`document.querySelector("#result")`, "the result page");
    assert.equal(
      await page.evaluate<string>(`document.querySelector("#result").textContent`),
      `Sent signal "decision-r1": released 1 step waiting on "approval <b>r1</b>".`,
    );
    await waitUntil(
      async () =>
        (await getRun(db.sql, runId))?.steps.find((s) => s.stepSlug === "decision")?.status ===
          "completed",
      "the decision completed",
    );
    assert.equal(server.log.length, 1);
    assert.match(server.log[0], /dashboard action send-signal .* from 127\.0\.0\.1: Sent signal/);

    await page.goto(`${server.root}/signals`);
    await page.screenshot(new URL("dashboard_signals.png", IMAGES).pathname);
    assert.deepEqual((await rows()).map((row) => [row[0], row[2]]), [
      ["decision-r1", "released"],
      ["typo", "pending"],
      ["old", "expired"],
    ]);
    for (
      const [query, expected] of [
        ["state=pending", ["typo"]],
        ["state=released", ["decision-r1"]],
        [`key=${encodeURIComponent(key("r0"))}`, ["typo"]],
        [`run=${runId}`, ["decision-r1"]],
      ] as const
    ) {
      await page.goto(`${server.root}/signals?${query}`);
      assert.deepEqual((await rows()).map((row) => row[0]), expected, query);
    }
  },
});

Deno.test("dashboard signals: a bad filter, a bad payload, a reused id or a foreign origin is refused", async () => {
  await using db = await freshDatabase();
  await sendSignal(db.sql, { key: "k1", payload: null, signalId: "s1" });
  await using server = dashboard(db);
  const headers = { authorization: `Bearer ${server.token}` };
  const get = (query: string) => fetch(`${server.root}/signals?${query}`, { headers });
  const state = await get("state=done");
  assert.equal(state.status, 400);
  assert.match(
    await state.text(),
    /state must be one of pending, released, expired, got &quot;done&quot;/,
  );
  const run = await get("run=r1");
  assert.equal(run.status, 400);
  assert.match(await run.text(), /run must be a run id/);

  const post = (form: Record<string, string>, extra: Record<string, string> = {}) =>
    fetch(`${server.root}/signals/send`, {
      method: "POST",
      headers: { ...headers, ...extra },
      body: new URLSearchParams(form),
    });
  const notJson = await post({ key: "k2", signal_id: "s2", payload: "{nope" });
  assert.equal(notJson.status, 400);
  assert.match(await notJson.text(), /the payload is not JSON/);
  const reused = await post({ key: "k2", signal_id: "s1", payload: "1" });
  assert.equal(reused.status, 400);
  assert.match(await reused.text(), /Cannot send signal &quot;s1&quot;.*k1/);
  const empty = await post({ key: "", signal_id: "s3" });
  assert.equal(empty.status, 400);
  assert.match(await empty.text(), /key must be a string of 1 to 1000 characters/);
  const foreign = await post({ key: "k2", signal_id: "s4" }, { origin: "http://evil.example" });
  assert.equal(foreign.status, 403);
  await foreign.body?.cancel();
  const rows = await db.sql`select signal_id from sluice.signals order by 1`;
  assert.deepEqual(rows.map((row) => row.signal_id), ["s1"]);
  assert.deepEqual(server.log, []);
});
