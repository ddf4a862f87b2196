// How the dashboard's run page shows durable waits (docs/waits.md): a waiting step has status
// waiting (its colour class, its words in the DAG) and its signal key or due time, escaped.
import assert from "node:assert/strict";
import { sendSignal } from "../../mod.ts";
import { freshDatabase } from "../_db.ts";
import { startWaitingRun, waitingFlow } from "../worker/_waiting_run.ts";
import { dashboard } from "./_browser.ts";

/** The time as the dashboard prints it. */
const shown = (at: Date | null) => at!.toISOString().replace("T", " ").replace(/\.\d{3}Z$/, "Z");

Deno.test("dashboard run page shows a waiting step as waiting with its signal key (escaped) and timeout, or its due time", async () => {
  await using db = await freshDatabase();
  // The key is the application's text: markup in it must stay text.
  const flow = waitingFlow("dash_waits", (id) => `approval <b>${id}</b> & "more"`);
  const { worker, runId, run } = await startWaitingRun(db, flow, "r1");
  await using _worker = worker;
  const [, decision, pause] = run.steps;
  await using server = dashboard(db);
  const response = await fetch(`${server.root}/runs/${runId}`, {
    headers: { authorization: `Bearer ${server.token}` },
  });
  assert.equal(response.status, 200);
  const html = await response.text();
  assert.ok(!html.includes("<b>r1</b>"), "the key's markup is escaped");
  const key = "&quot;approval &lt;b&gt;r1&lt;/b&gt; &amp; \\&quot;more\\&quot;&quot;";

  // The DAG: the waiting colour class and the kind of wait; the tooltip says what it waits for.
  assert.ok(
    html.includes(
      `<g class="node s-waiting wait" data-step="decision" data-status="waiting" data-wait="true">\n` +
        `<title>decision: waiting · signal · signal ${key} (times out ${
          shown(decision.waitUntil)
        })</title>`,
    ),
    html,
  );
  assert.match(
    html,
    /data-step="decision" data-status="waiting" data-wait="true">[\s\S]*?>waiting · signal<\/text>/,
  );
  assert.ok(
    html.includes(
      `<g class="node s-waiting wait" data-step="pause" data-status="waiting" data-wait="true">\n` +
        `<title>pause: waiting · sleep · until ${shown(pause.waitUntil)}</title>`,
    ),
    html,
  );

  // The steps table: the badge, what it waits for, and the time since it started waiting.
  const row = (slug: string, page = html) =>
    new RegExp(`<tr data-step="${slug}">[\\s\\S]*?</tr>`).exec(page)![0];
  assert.ok(
    row("decision").includes(
      `<span class="badge s-waiting">waiting</span><br><span class="wait">signal ${key} ` +
        `(times out ${shown(decision.waitUntil)})</span>`,
    ),
    row("decision"),
  );
  assert.ok(
    row("pause").includes(
      `<span class="badge s-waiting">waiting</span><br><span class="wait">until ${
        shown(pause.waitUntil)
      }</span>`,
    ),
    row("pause"),
  );
  assert.ok(row("pause").includes(`<td>${shown(pause.waitingAt)}</td>`), row("pause"));
  assert.match(html, /\.s-waiting\{--c:#[0-9a-f]{6}\}/, "waiting has its colour");

  // Once the signal comes, the step is completed and says nothing of a wait.
  await sendSignal(db.sql, {
    key: 'approval <b>r1</b> & "more"',
    payload: true,
    signalId: "d1",
  });
  const after = await (await fetch(`${server.root}/runs/${runId}`, {
    headers: { authorization: `Bearer ${server.token}` },
  })).text();
  assert.match(after, /data-step="decision" data-status="completed"/);
  assert.ok(!row("decision", after).includes('class="wait"'), row("decision", after));
});
