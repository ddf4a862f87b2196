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

Deno.test("dashboard answers 400 to a bad form or an over-long reason and 413 over the body limit, changing nothing", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "dash_bad", steps: [{ slug: "only" }] });
  await registerWorker(db.sql, "dash_bad", "dash_bad");
  const runId = await startFlow(db.sql, "dash_bad", {});
  await using server = dashboard(db);
  const post = (path: string, body: BodyInit, type?: string) =>
    get(`${server.root}${path}`, server.token, {
      method: "POST",
      headers: { origin: server.origin, ...(type === undefined ? {} : { "content-type": type }) },
      body,
    });
  const cancel = `/runs/${runId}/cancel`;

  const long = await post(cancel, new URLSearchParams({ reason: "x".repeat(1001) }));
  assert.equal(long.status, 400, long.text);
  assert.match(long.text, /the reason is 1001 characters, more than the limit of 1000/);
  const bad = await post(cancel, `{"reason":"x"}`, "application/json");
  assert.equal(bad.status, 400, bad.text);
  assert.match(bad.text, /the body is not a form/);
  const action = await post(
    "/actions/clear-pause",
    `{"function":"x"}`,
    "application/json",
  );
  assert.equal(action.status, 400, action.text);
  assert.match(action.text, /the body is not a form/);
  // 30 MB, declared and sent chunked without a length: answered 413 once the limit is passed,
  // and the client could send only a part of it (the server stopped reading).
  for (const framing of ["length", "chunked"] as const) {
    const { status, sent } = await postRaw(server.root, server.token, cancel, framing);
    assert.equal(status, 413, framing);
    assert.ok(sent < 30 * 1024 * 1024, `${framing}: the server read all ${sent} bytes`);
  }
  assert.equal(
    (await db.sql`select status from sluice.runs where run_id = ${runId}`)[0].status,
    "started",
  );
});

/**
 * POSTs 30 MB to `path` over a raw connection (declared by a content length, or chunked), writing
 * until the server answers or stops reading; returns the answer's status and the bytes written.
 */
async function postRaw(
  root: string,
  token: string,
  path: string,
  framing: "length" | "chunked",
): Promise<{ status: number; sent: number }> {
  const url = new URL(`${root}${path}`);
  const total = 30 * 1024 * 1024;
  const conn = await Deno.connect({ hostname: url.hostname, port: Number(url.port) });
  const head = `POST ${url.pathname} HTTP/1.1\r\nhost: ${url.host}\r\n` +
    `authorization: Bearer ${token}\r\ncontent-type: application/x-www-form-urlencoded\r\n` +
    (framing === "length" ? `content-length: ${total}\r\n` : "transfer-encoding: chunked\r\n") +
    "connection: close\r\n\r\n";
  const encoder = new TextEncoder();
  await conn.write(encoder.encode(head));
  let sent = 0;
  let answered = false;
  const writing = (async () => {
    const chunk = new Uint8Array(64 * 1024).fill(120);
    const framed = framing === "length" ? chunk : new Uint8Array([
      ...encoder.encode(`${chunk.byteLength.toString(16)}\r\n`),
      ...chunk,
      ...encoder.encode("\r\n"),
    ]);
    try {
      while (!answered && sent < total) {
        await conn.write(framed);
        sent += chunk.byteLength;
      }
      if (!answered && framing === "chunked") await conn.write(encoder.encode("0\r\n\r\n"));
    } catch {
      // The server closed the connection after answering: the rest was never read.
    }
  })();
  const buffer = new Uint8Array(4096);
  const read = await conn.read(buffer);
  answered = true;
  const statusLine = new TextDecoder().decode(buffer.subarray(0, read ?? 0)).split("\r\n")[0];
  await writing;
  conn.close();
  return { status: Number(statusLine.split(" ")[1]), sent };
}
