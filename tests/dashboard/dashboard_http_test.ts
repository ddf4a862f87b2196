import assert from "node:assert/strict";
import { main } from "../../src/cli/main.ts";
import { DashboardOptionsError, startDashboard } from "../../src/dashboard/mod.ts";
import { compileFlow, registerWorker, startFlow } from "../sql/_fixtures.ts";
import { freshDatabase } from "../_db.ts";
import { waitUntil } from "../_support.ts";
import { dashboard } from "./_browser.ts";

/** A GET or POST with the token as a bearer header; the body read as text. */
async function get(
  url: string,
  token: string | null,
  init: RequestInit = {},
): Promise<{ status: number; text: string; headers: Headers }> {
  const headers = new Headers(init.headers);
  if (token !== null) headers.set("authorization", `Bearer ${token}`);
  const response = await fetch(url, { ...init, headers, redirect: "manual" });
  return { status: response.status, text: await response.text(), headers: response.headers };
}

Deno.test("dashboard answers 401 to every request without the right token", async () => {
  await using db = await freshDatabase();
  await using server = dashboard(db);
  const runId = crypto.randomUUID();
  for (const path of ["/", "/runs", `/runs/${runId}`, `/runs/${runId}/events`, "/flows/x"]) {
    const missing = await get(`${server.root}${path}`, null);
    assert.equal(missing.status, 401, `${path} without a token`);
    assert.match(missing.text, /^Unauthorized: open the address the dashboard printed/);
    assert.equal(
      (await get(`${server.root}${path}`, "wrong")).status,
      401,
      `${path}, wrong token`,
    );
    assert.equal(
      (await get(`${server.root}${path}?token=wrong`, null)).status,
      401,
      `${path}, wrong token in the URL`,
    );
  }
  const action = await get(`${server.root}/actions/disable`, null, {
    method: "POST",
    body: new URLSearchParams({ function: "anything" }),
  });
  assert.equal(action.status, 401);
  assert.equal((await get(`${server.root}/`, server.token)).status, 200);
});

Deno.test("dashboard trades the token in the URL for a cookie scoped to its random base path", async () => {
  await using db = await freshDatabase();
  await using server = dashboard(db);
  const base = new URL(server.root).pathname;
  assert.match(base, /^\/[0-9a-f]{32}$/);
  assert.equal(server.url, `${server.root}/?token=${server.token}`);
  const welcome = await get(`${server.url}&status=failed`.replace("/?", "/runs?"), null);
  assert.equal(welcome.status, 303);
  assert.equal(welcome.headers.get("location"), `${base}/runs?status=failed`);
  const cookie = welcome.headers.get("set-cookie")!;
  assert.equal(
    cookie,
    `sluice_dashboard=${server.token}; Path=${base}/; HttpOnly; SameSite=Strict`,
  );
  const page = await get(`${server.root}/runs?status=failed`, null, {
    headers: { cookie: cookie.split(";")[0] },
  });
  assert.equal(page.status, 200);
  assert.match(page.text, /No runs match/);
  // The page's relative links resolve under the base path.
  assert.ok(page.text.includes(`<head><base href="${base}/">`), page.text.slice(0, 300));
  // Outside the base path nothing answers and nothing is set, even with the right token.
  for (const path of ["/", `/?token=${server.token}`, "/runs", base, `${base}x/`]) {
    const outside = await get(`${server.origin}${path}`, server.token);
    assert.equal(outside.status, 404, path);
    assert.equal(outside.headers.get("set-cookie"), null, path);
    assert.ok(!outside.text.includes(base), `${path}: the 404 does not tell the base path`);
  }
  // Another start has another base path.
  await using other = dashboard(db);
  assert.notEqual(new URL(other.root).pathname, base);
});

Deno.test("dashboard refuses a non-loopback address without a secret, and a short secret", async () => {
  await using db = await freshDatabase();
  assert.throws(
    () => startDashboard(db.sql, { hostname: "0.0.0.0", port: 0 }),
    (error: unknown) =>
      error instanceof DashboardOptionsError && error.option === "hostname" &&
      /Cannot start the dashboard on "0\.0\.0\.0": an address other machines can reach needs a configured secret/
        .test(error.message),
  );
  assert.throws(
    () => startDashboard(db.sql, { hostname: "0.0.0.0", port: 0, secret: "short" }),
    /the secret must have at least 16 characters, got 5/,
  );
  assert.throws(() => startDashboard(db.sql, { port: 70000 }), /port must be a whole number/);
  await using remote = startDashboard(db.sql, {
    hostname: "0.0.0.0",
    port: 0,
    secret: "a-configured-secret",
  });
  assert.equal(remote.token, "a-configured-secret");
  const { port, pathname } = new URL(remote.root);
  assert.equal((await get(`http://127.0.0.1:${port}${pathname}/`, null)).status, 401);
  assert.equal(
    (await get(`http://127.0.0.1:${port}${pathname}/`, "a-configured-secret")).status,
    200,
  );

  const err: string[] = [];
  const code = await main(["dashboard", "--host", "0.0.0.0", "--port", "0"], {
    databaseUrl: db.url,
    io: { out: () => {}, err: (line) => err.push(line) },
  });
  assert.equal(code, 2);
  assert.match(err.join("\n"), /needs a configured secret \(--secret or SLUICE_DASHBOARD_SECRET\)/);
});

Deno.test("dashboard actions refuse another origin and unknown functions, and log what they do", async () => {
  await using db = await freshDatabase();
  await db.sql`select sluice.track_worker_function('dash-fn')`;
  await using server = dashboard(db);
  const post = (name: string, origin: string) =>
    get(`${server.root}/actions/disable`, server.token, {
      method: "POST",
      headers: { origin },
      body: new URLSearchParams({ function: name }),
    });
  const enabled = async () =>
    (await db.sql`select enabled from sluice.worker_functions where function_name = 'dash-fn'`)[0]
      .enabled;

  const foreign = await post("dash-fn", "http://evil.example");
  assert.equal(foreign.status, 403);
  assert.equal(await enabled(), true);

  const unknown = await post("dash-typo", server.origin);
  assert.equal(unknown.status, 404);
  assert.match(
    unknown.text,
    /Cannot disable &quot;dash-typo&quot;: no worker function has that name/,
  );
  const [{ count }] = await db.sql`select count(*)::int from sluice.worker_functions`;
  assert.equal(count, 1, "a typo creates no row");

  const confirm = await get(`${server.root}/actions/disable?function=dash-fn`, server.token);
  assert.match(confirm.text, /Disable worker function &quot;dash-fn&quot;\?/);
  assert.equal(await enabled(), true, "the confirmation page changes nothing");

  const done = await post("dash-fn", server.origin);
  assert.equal(done.status, 200);
  assert.match(done.text, /Worker function &quot;dash-fn&quot; is now disabled\./);
  assert.equal(await enabled(), false);
  assert.deepEqual(server.log.map((line) => line.replace(/^\S+ /, "")), [
    'dashboard action disable "dash-fn" from 127.0.0.1: Worker function "dash-fn" is now disabled.',
  ]);
});

Deno.test("dashboard runs page filters by flow and status, pages by 50, and rejects a bad filter", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "dash_a", steps: [{ slug: "only" }] });
  await compileFlow(db.sql, { slug: "dash_b", steps: [{ slug: "only" }] });
  await db.sql`select sluice.start_flow('dash_a', '{}'::jsonb) from generate_series(1, 52)`;
  const bRun = await startFlow(db.sql, "dash_b", {});
  await using server = dashboard(db);
  const runIds = (text: string) => [...text.matchAll(/<tr data-run="([^"]+)"/g)].map((m) => m[1]);

  const first = await get(`${server.root}/runs?flow=dash_a`, server.token);
  assert.equal(runIds(first.text).length, 50);
  assert.match(first.text, /href="runs\?flow=dash_a&amp;offset=50">older/);
  const second = await get(`${server.root}/runs?flow=dash_a&offset=50`, server.token);
  assert.equal(runIds(second.text).length, 2);
  assert.doesNotMatch(second.text, /older →/);
  assert.equal(new Set([...runIds(first.text), ...runIds(second.text)]).size, 52);

  const b = await get(
    `${server.root}/runs?flow=dash_b&status=started&since=1+hour`,
    server.token,
  );
  assert.deepEqual(runIds(b.text), [bRun]);
  const none = await get(`${server.root}/runs?status=completed`, server.token);
  assert.deepEqual(runIds(none.text), []);

  const badStatus = await get(`${server.root}/runs?status=done`, server.token);
  assert.equal(badStatus.status, 400);
  assert.match(
    badStatus.text,
    /status must be one of started, completed, failed, cancelled, got &quot;done&quot;/,
  );
  const badSince = await get(`${server.root}/runs?since=yesterday-ish`, server.token);
  assert.equal(badSince.status, 400);
  assert.match(badSince.text, /since must be an interval \(1 hour\) or a timestamp/);
});

Deno.test("dashboard flow page shows the steps, their queues and the stored shape", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "dash_shape",
    queueMode: "step",
    maxAttempts: 5,
    steps: [{ slug: "load" }, { slug: "each", type: "map", deps: ["load"], mapSource: "load" }],
  });
  await using server = dashboard(db);
  const page = await get(`${server.root}/flows/dash_shape`, server.token);
  assert.equal(page.status, 200);
  assert.match(
    page.text,
    /<tr data-step="each">.*<td>map over load<\/td>\s*<td>load<\/td><td>dash_shape__each<\/td>\s*<td>5 \(flow\)<\/td>/s,
  );
  assert.match(page.text, /<g class="node s-created" data-step="each"/);
  const shape = /<pre id="shape">([^<]*)<\/pre>/.exec(page.text)![1].replaceAll("&quot;", '"');
  assert.deepEqual(
    JSON.parse(shape).steps.map((
      step: { step_slug: string; deps: string[] },
    ) => [step.step_slug, step.deps]),
    [["load", []], ["each", ["load"]]],
  );
  const missing = await get(`${server.root}/flows/nope`, server.token);
  assert.equal(missing.status, 404);
  const noRun = await get(`${server.root}/runs/${crypto.randomUUID()}`, server.token);
  assert.equal(noRun.status, 404);
});

Deno.test("dashboard routes: a method no route takes is 405, a path no route matches is 404", async () => {
  await using db = await freshDatabase();
  await using server = dashboard(db);
  const put = await get(`${server.root}/`, server.token, { method: "PUT" });
  assert.equal(put.status, 405);
  assert.equal(put.headers.get("allow"), "GET, POST");
  const cases: [string, string, RegExp][] = [
    ["GET", "/nowhere", /Nothing at \/nowhere/],
    ["GET", "/actions/zap", /Nothing at \/actions\/zap/],
    ["GET", "/runs/not-a-uuid", /Cannot show run &quot;not-a-uuid&quot;: not a run id/],
    ["GET", "/runs/not-a-uuid/events", /not a run id/],
    ["POST", "/runs", /No action at \/runs/],
    ["POST", "/actions/zap", /No action at \/actions\/zap/],
  ];
  for (const [method, path, text] of cases) {
    const response = await get(`${server.root}${path}`, server.token, {
      method,
      ...(method === "POST" ? { headers: { origin: server.origin }, body: "" } : {}),
    });
    assert.equal(response.status, 404, `${method} ${path}`);
    assert.match(response.text, text, `${method} ${path}`);
    assert.match(response.headers.get("content-security-policy") ?? "", /frame-ancestors 'none'/);
  }
});

Deno.test("deno task dashboard serves the database of --database-url until SIGINT", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "dash_cli", steps: [{ slug: "only" }] });
  await registerWorker(db.sql, "dash_cli", "dash_cli", "dash-cli");
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("../../cli.ts", import.meta.url).pathname,
      "ops",
      "dashboard",
      "--port",
      "0",
      "--database-url",
      db.url,
    ],
    env: { DATABASE_URL: "" },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let printed = "";
  const address = await waitUntil(async () => {
    const { value } = await lines.read();
    printed += value ?? "";
    return /open (http:\/\/127\.0\.0\.1:\d+\/[0-9a-f]{32}\/\?token=[0-9a-f]{64})/.exec(printed)
      ?.[1];
  }, "the printed address");
  const url = new URL(address);
  const token = url.searchParams.get("token")!;
  const overview = await get(`${url.origin}${url.pathname}`, token);
  assert.equal(overview.status, 200);
  assert.match(overview.text, /data-function="dash-cli"/);
  assert.equal((await get(`${url.origin}${url.pathname}`, null)).status, 401);
  child.kill("SIGINT");
  const status = await child.status;
  await lines.cancel();
  await child.stderr.cancel();
  assert.equal(status.code, 0);
});

Deno.test("dashboard live stream sends the run's parts, and a closed page releases its LISTEN connection", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "dash_live", steps: [{ slug: "only" }] });
  const runId = await startFlow(db.sql, "dash_live", {});
  await using server = dashboard(db);
  const listening = async () => {
    const [{ count }] = await db.sql`
      select count(*)::int from pg_stat_activity
      where datname = current_database() and query like 'listen sluice_run_%'`;
    return count;
  };
  const pages = new AbortController();
  const response = await fetch(`${server.root}/runs/${runId}/events`, {
    headers: { authorization: `Bearer ${server.token}` },
    signal: pages.signal,
  });
  assert.equal(response.headers.get("content-type"), "text/event-stream");
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  const { value } = await reader.read();
  const [, event, data] = /^event: (\w+)\ndata: (.*)\n\n/.exec(value!)!;
  assert.equal(event, "parts");
  assert.deepEqual(Object.keys(JSON.parse(data)), ["summary", "dag", "steps", "timeline"]);
  assert.match(JSON.parse(data).dag, /data-step="only" data-status="started"/);
  await waitUntil(async () => await listening() === 1, "the stream's LISTEN connection");
  pages.abort();
  await reader.cancel().catch(() => {});
  await waitUntil(async () => await listening() === 0, "the LISTEN connection to close");
});

Deno.test("dashboard pages allow only the run page's own script", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "dash_csp", steps: [{ slug: "only" }] });
  const runId = await startFlow(db.sql, "dash_csp", {});
  await using server = dashboard(db);
  const page = await get(`${server.root}/runs/${runId}`, server.token);
  const script = /<script type="module">([\s\S]*?)<\/script>/.exec(page.text)![1];
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(script)),
  );
  const hash = btoa(String.fromCharCode(...digest));
  const policy = page.headers.get("content-security-policy")!;
  assert.match(policy, new RegExp(`script-src 'sha256-${hash.replace(/[+/]/g, "\\$&")}';`));
  assert.doesNotMatch(policy, /script-src[^;]*unsafe-inline/);
});

Deno.test("dashboard takes its secret from --secret-file, warns of --secret in argv, refuses both", async () => {
  await using db = await freshDatabase();
  const dir = await Deno.makeTempDir();
  try {
    const run = async (...args: string[]) => {
      const err: string[] = [];
      const code = await main(["dashboard", ...args], {
        databaseUrl: db.url,
        io: { out: () => {}, err: (line) => err.push(line) },
      });
      return { code, err: err.join("\n") };
    };
    // A short secret in the file is refused: the file's first line was read as the secret.
    await Deno.writeTextFile(`${dir}/short`, "short\n");
    const short = await run("--secret-file", `${dir}/short`, "--host", "0.0.0.0", "--port", "0");
    assert.equal(short.code, 2);
    assert.match(short.err, /the secret must have at least 16 characters, got 5/);
    const missing = await run("--secret-file", `${dir}/none`);
    assert.equal(missing.code, 2);
    assert.match(missing.err, new RegExp(`cannot read --secret-file "${dir}/none"`));
    const both = await run("--secret-file", `${dir}/short`, "--secret", "a-configured-secret");
    assert.equal(both.code, 2);
    assert.match(both.err, /give --secret-file or --secret, not both/);
    const inline = await run("--secret", "a-configured-secret", "--port", "x");
    assert.equal(inline.code, 2);
    assert.match(inline.err, /warning: --secret shows in `ps`/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
