// The dashboard's run actions: cancel a started run and retry a failed or cancelled one, each
// confirmed first (a page that changes nothing), refused from another origin, and logged.
import assert from "node:assert/strict";
import { compileFlow, registerWorker, startFlow } from "../sql/_fixtures.ts";
import { freshDatabase } from "../_db.ts";
import { dashboard } from "./_browser.ts";

async function get(
  url: string,
  token: string,
  init: RequestInit = {},
): Promise<{ status: number; text: string }> {
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${token}`);
  const response = await fetch(url, { ...init, headers, redirect: "manual" });
  return { status: response.status, text: await response.text() };
}

Deno.test("dashboard cancels a run with its reason and retries it, each after a confirmation; the run and runs pages show both", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "dash_ctl", steps: [{ slug: "only" }] });
  await registerWorker(db.sql, "dash_ctl", "dash_ctl");
  const runId = await startFlow(db.sql, "dash_ctl", {});
  await using server = dashboard(db);
  const status = async () =>
    (await db.sql`select status from sluice.runs where run_id = ${runId}`)[0].status;
  const post = (action: string, body: Record<string, string>, origin = server.origin) =>
    get(`${server.root}/runs/${runId}/${action}`, server.token, {
      method: "POST",
      headers: { origin },
      body: new URLSearchParams(body),
    });

  const page = await get(`${server.root}/runs/${runId}`, server.token);
  assert.match(page.text, new RegExp(`action="runs/${runId}/cancel"`));
  const confirm = await get(`${server.root}/runs/${runId}/cancel`, server.token);
  assert.equal(confirm.status, 200);
  assert.match(confirm.text, new RegExp(`Cancel run ${runId}\\?`));
  assert.match(confirm.text, /name="reason"/);
  assert.equal(await status(), "started", "the confirmation page changes nothing");

  assert.equal((await post("cancel", { reason: "x" }, "http://evil.example")).status, 403);
  assert.equal((await post("cancel", { reason: " " })).status, 400);
  assert.equal(await status(), "started");
  const cancelled = await post("cancel", { reason: "duplicate" });
  assert.equal(cancelled.status, 200);
  assert.match(
    cancelled.text,
    new RegExp(`Cancelled run ${runId} \\(1 task stopped\\): duplicate`),
  );
  assert.equal(await status(), "cancelled");
  const again = await post("cancel", { reason: "again" });
  assert.match(again.text, /had already been cancelled; nothing changed/);

  const shown = await get(`${server.root}/runs/${runId}`, server.token);
  assert.match(shown.text, /id="run-cancelled">by \w+: <span class="error">duplicate<\/span>/);
  assert.match(shown.text, new RegExp(`action="runs/${runId}/retry"`));
  const listed = await get(`${server.root}/runs?status=cancelled`, server.token);
  assert.match(listed.text, /cancelled: duplicate/);

  assert.match(
    (await get(`${server.root}/runs/${runId}/retry`, server.token)).text,
    new RegExp(`Retry run ${runId}\\?`),
  );
  const retried = await post("retry", {});
  assert.equal(retried.status, 200);
  assert.match(retried.text, new RegExp(`Retried run ${runId} \\(retry 1\\): 1 task queued`));
  assert.equal(await status(), "started");
  const after = await get(`${server.root}/runs/${runId}`, server.token);
  assert.match(after.text, /id="run-retried">1×/);
  assert.match((await get(`${server.root}/runs?flow=dash_ctl`, server.token)).text, /retried 1×/);
  assert.deepEqual(server.log.map((line) => line.replace(/^\S+ /, "")), [
    `dashboard action cancel run ${runId} from 127.0.0.1: Cannot cancel run ${runId}: give a reason`,
    `dashboard action cancel run ${runId} from 127.0.0.1: Cancelled run ${runId} (1 task stopped): duplicate`,
    `dashboard action cancel run ${runId} from 127.0.0.1: Run ${runId} had already been cancelled; nothing changed.`,
    `dashboard action retry run ${runId} from 127.0.0.1: Retried run ${runId} (retry 1): 1 task queued again; status started.`,
  ]);

  const unknown = crypto.randomUUID();
  assert.equal((await get(`${server.root}/runs/${unknown}/retry`, server.token)).status, 404);
  const missing = await get(`${server.root}/runs/${unknown}/retry`, server.token, {
    method: "POST",
    headers: { origin: server.origin },
    body: new URLSearchParams({}),
  });
  assert.equal(missing.status, 404);
  assert.match(missing.text, /no such run/);
});
