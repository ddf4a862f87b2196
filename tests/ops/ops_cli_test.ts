import assert from "node:assert/strict";
import type postgres from "postgres";
import type { DeployableFlow } from "../../mod.ts";
import { extractDefinition } from "../../src/admin/mod.ts";
import { greetUser, threadDigest } from "../../examples/flows.ts";
import { main } from "../../src/cli/main.ts";
import { freshDatabase } from "../_db.ts";

type Sql = postgres.Sql;

/** Runs `deno task ops <args>` in-process against `url`; returns the exit code and output. */
async function ops(url: string, ...args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(args, {
    databaseUrl: url,
    io: { out: (line) => out.push(line), err: (line) => err.push(line) },
  });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

/** Compiles a flow the way a worker does at startup. */
async function compile(sql: Sql, flow: DeployableFlow): Promise<void> {
  const definition = extractDefinition(flow) as unknown as postgres.JSONValue;
  const [{ result }] = await sql`
    select sluice.ensure_flow_compiled(${sql.json(definition)}::jsonb, 'production') as result
  `;
  assert.equal(result.outcome, "compiled");
}

/** Registers a live worker of `functionName` on one route (a null step serves every step). */
async function registerWorker(
  sql: Sql,
  functionName: string,
  queue: string,
  flow: string,
  step: string | null,
): Promise<string> {
  const workerId = crypto.randomUUID();
  await sql`select sluice.track_worker_function(${functionName})`;
  await sql`select sluice.register_worker(${workerId}, ${functionName}, ${queue}, ${flow}, ${step})`;
  return workerId;
}

async function startRun(sql: Sql, flow: string, input: postgres.JSONValue): Promise<string> {
  const [{ run_id }] = await sql`select sluice.start_flow(${flow}, ${sql.json(input)}) as run_id`;
  return run_id;
}

/** Both example flows compiled; workers for every route but `thread_digest.fetch_posts`. */
async function exampleDeployment(sql: Sql): Promise<void> {
  await compile(sql, greetUser);
  await compile(sql, threadDigest);
  await registerWorker(sql, "greet-user", "greet_user", "greet_user", null);
  await registerWorker(
    sql,
    "thread-digest--classify",
    "thread_digest__classify",
    "thread_digest",
    "classify",
  );
  await registerWorker(
    sql,
    "thread-digest--deliver",
    "thread_digest__deliver",
    "thread_digest",
    "deliver",
  );
  await startRun(sql, "thread_digest", { threadId: "t1", posts: [{ id: 1, text: "hi?" }] });
}

Deno.test("ops coverage flags the route without a live worker and counts its waiting tasks", async () => {
  await using db = await freshDatabase();
  await exampleDeployment(db.sql);

  const result = await ops(db.url, "coverage");
  assert.equal(result.code, 0, "a missing worker is reported, not a failure");
  assert.equal(result.err, "");
  assert.equal(
    result.out,
    [
      "FLOW           STEP         QUEUE                       WORKERS  QUEUED  STATUS",
      "greet_user     compose      greet_user                        1       0  ok",
      "greet_user     record       greet_user                        1       0  ok",
      "thread_digest  fetch_posts  thread_digest__fetch_posts        0       1  MISSING",
      "thread_digest  classify     thread_digest__classify           1       0  ok",
      "thread_digest  deliver      thread_digest__deliver            1       0  ok",
      "",
      "1 of 5 routes have no live worker; their tasks wait in their queues until a worker for " +
      "them starts.",
    ].join("\n"),
  );
});

Deno.test("ops coverage --json lists every route with its workers, queued tasks and flag", async () => {
  await using db = await freshDatabase();
  await exampleDeployment(db.sql);

  const result = await ops(db.url, "coverage", "--json");
  assert.equal(result.code, 0);
  const rows = JSON.parse(result.out) as Record<string, unknown>[];
  assert.deepEqual(
    rows.map((
      { flow_slug, step_slug, queue_name, live_workers, queued_tasks, missing_worker },
    ) => ({
      flow_slug,
      step_slug,
      queue_name,
      live_workers,
      queued_tasks,
      missing_worker,
    })),
    [
      ["greet_user", "compose", "greet_user", 1, 0, false],
      ["greet_user", "record", "greet_user", 1, 0, false],
      ["thread_digest", "fetch_posts", "thread_digest__fetch_posts", 0, 1, true],
      ["thread_digest", "classify", "thread_digest__classify", 1, 0, false],
      ["thread_digest", "deliver", "thread_digest__deliver", 1, 0, false],
    ].map(([flow_slug, step_slug, queue_name, live_workers, queued_tasks, missing_worker]) => ({
      flow_slug,
      step_slug,
      queue_name,
      live_workers,
      queued_tasks,
      missing_worker,
    })),
  );
  assert.equal(typeof rows[0].last_heartbeat_at, "string");
  assert.equal(rows[2].last_heartbeat_at, null);
});

Deno.test("ops coverage counts a worker with a stale heartbeat as missing", async () => {
  await using db = await freshDatabase();
  await compile(db.sql, greetUser);
  await registerWorker(db.sql, "greet-user", "greet_user", "greet_user", null);
  await db.sql`update sluice.workers set last_heartbeat_at = now() - interval '1 minute'`;

  const result = await ops(db.url, "coverage");
  assert.equal(result.code, 0);
  assert.match(result.out, /^greet_user {2}compose {2}greet_user {8}0 {7}0 {2}MISSING$/m);
  assert.match(result.out, /2 of 2 routes have no live worker/);
});

Deno.test("ops coverage says so when every route is covered, and when nothing is compiled", async () => {
  await using db = await freshDatabase();
  assert.deepEqual(await ops(db.url, "coverage"), {
    code: 0,
    out: "No compiled flows, so no routes.",
    err: "",
  });
  await compile(db.sql, greetUser);
  await registerWorker(db.sql, "greet-user", "greet_user", "greet_user", null);
  const result = await ops(db.url, "coverage");
  assert.match(result.out, /\nAll 2 routes have a live worker\.$/);
});

Deno.test("ops queues shows each registered queue with its depth and live workers", async () => {
  await using db = await freshDatabase();
  await exampleDeployment(db.sql);

  const result = await ops(db.url, "queues");
  assert.equal(result.code, 0);
  const lines = result.out.split("\n");
  assert.equal(
    lines[0],
    "QUEUE                       OWNERSHIP  OWNER          DEPTH  VISIBLE  OLDEST  WORKERS",
  );
  assert.deepEqual(
    lines.slice(1).map((line) => line.split(/ +/)),
    [
      ["greet_user", "private", "greet_user", "0", "0", "-", "1"],
      ["thread_digest__classify", "private", "thread_digest", "0", "0", "-", "1"],
      ["thread_digest__deliver", "private", "thread_digest", "0", "0", "-", "1"],
      // The age is whole seconds since the run started: 0 or 1 here.
      [
        "thread_digest__fetch_posts",
        "private",
        "thread_digest",
        "1",
        "1",
        lines[4].split(/ +/)[5],
        "0",
      ],
    ],
  );
  assert.match(lines[4].split(/ +/)[5], /^\d+s$/);

  const json = JSON.parse((await ops(db.url, "queues", "--json")).out);
  assert.deepEqual(
    { ...json[3], oldest_msg_age_sec: undefined },
    {
      queue_name: "thread_digest__fetch_posts",
      ownership: "private",
      owner_flow_slug: "thread_digest",
      queue_length: 1,
      queue_visible_length: 1,
      oldest_msg_age_sec: undefined,
      live_workers: 0,
    },
  );
});

Deno.test("ops functions and clear-pause: a paused function is listed, cleared once, then left alone", async () => {
  await using db = await freshDatabase();
  await exampleDeployment(db.sql);
  await db.sql`
    update sluice.worker_functions
    set restart_paused_at = '2026-11-30T12:00:00Z', pause_reason = 'unsupported message 7'
    where function_name = 'thread-digest--classify'
  `;

  const listed = await ops(db.url, "functions");
  assert.equal(listed.code, 0);
  const rows = listed.out.split("\n").map((line) => line.split(/ {2,}/));
  assert.deepEqual(rows[0], [
    "FUNCTION",
    "ENABLED",
    "PAUSED SINCE",
    "WORKERS",
    "LAST INVOKED",
    "PAUSE REASON",
  ]);
  assert.deepEqual(rows.slice(1).map((row) => [row[0], row[1], row[2], row[3], row[5]]), [
    ["greet-user", "yes", "-", "1", "-"],
    ["thread-digest--classify", "yes", "2026-11-30T12:00:00Z", "1", "unsupported message 7"],
    ["thread-digest--deliver", "yes", "-", "1", "-"],
  ]);

  assert.deepEqual(await ops(db.url, "clear-pause", "thread-digest--classify"), {
    code: 0,
    out: 'Cleared the restart pause of worker function "thread-digest--classify".',
    err: "",
  });
  const [fn] = await db.sql`
    select restart_paused from sluice.worker_function_status
    where function_name = 'thread-digest--classify'
  `;
  assert.equal(fn.restart_paused, false);
  assert.deepEqual(await ops(db.url, "clear-pause", "thread-digest--classify"), {
    code: 0,
    out: 'Worker function "thread-digest--classify" was not restart-paused; nothing changed.',
    err: "",
  });
  const unknown = await ops(db.url, "clear-pause", "thread-digest--clasify");
  assert.equal(unknown.code, 1);
  assert.match(unknown.err, /no worker function has that name/);
});

Deno.test("ops prune deletes finished runs older than the interval and rejects a bad interval", async () => {
  await using db = await freshDatabase();
  await compile(db.sql, greetUser);
  const runId = await startRun(db.sql, "greet_user", { name: "Ada" });
  const workerId = await registerWorker(db.sql, "greet-user", "greet_user", "greet_user", null);
  const supported = db.sql.json([
    { flow_slug: "greet_user", step_slug: "compose" },
    { flow_slug: "greet_user", step_slug: "record" },
  ]);
  for (const step of ["compose", "record"]) {
    const messages = await db.sql`select msg_id from pgmq.read('greet_user', 30, 10)`;
    const [{ result }] = await db.sql`
      select sluice.start_tasks('greet_user', ${messages.map((m) => m.msg_id)}::bigint[],
        ${workerId}, ${supported}::jsonb) as result
    `;
    assert.equal(result.tasks[0].step_slug, step);
    await db.sql`select sluice.complete_task(${runId}, ${step}, 0, ${
      result.tasks[0].attempt
    }, ${workerId}, '"done"'::jsonb)`;
  }

  assert.deepEqual(await ops(db.url, "prune", "1 day"), {
    code: 0,
    out:
      "Pruned 0 runs finished and 0 workers stopped more than 1 day ago, and 0 signals expired or consumed.",
    err: "",
  });
  assert.deepEqual(await ops(db.url, "prune", "0 seconds"), {
    code: 0,
    out:
      "Pruned 1 runs finished and 0 workers stopped more than 0 seconds ago, and 0 signals expired or consumed.",
    err: "",
  });
  const [{ count }] = await db.sql`select count(*)::int as count from sluice.runs`;
  assert.equal(count, 0);

  const bad = await ops(db.url, "prune", "soon");
  assert.equal(bad.code, 1);
  assert.match(bad.err, /^Cannot run ops prune: invalid input syntax for type interval: "soon"/);
  const negative = await ops(db.url, "prune", "-1 day");
  assert.equal(negative.code, 1);
  assert.match(negative.err, /retention must be a non-negative interval/);
});

Deno.test("ops rejects bad usage and a missing DATABASE_URL with exit code 2", async () => {
  const io = { out: () => {}, err: () => {} };
  assert.equal(await main([], { io }), 2);
  assert.equal(await main(["status"], { io }), 2);
  assert.equal(await main(["prune"], { databaseUrl: "postgres://unused", io }), 2);
  assert.equal(await main(["coverage", "--verbose"], { databaseUrl: "postgres://unused", io }), 2);

  const err: string[] = [];
  const code = await main(["coverage"], {
    databaseUrl: "",
    io: { out: () => {}, err: (line) => err.push(line) },
  });
  assert.equal(code, 2);
  assert.match(err.join("\n"), /^Cannot run ops coverage: DATABASE_URL is not set/);

  const out: string[] = [];
  assert.equal(await main(["--help"], { io: { out: (line) => out.push(line), err: () => {} } }), 0);
  for (const command of ["coverage", "queues", "functions", "clear-pause", "prune"]) {
    assert.match(out.join("\n"), new RegExp(`^  ${command} `, "m"));
  }
});

Deno.test("deno task ops coverage runs as a process and exits 0 with a MISSING route", async () => {
  await using db = await freshDatabase();
  await exampleDeployment(db.sql);
  const { code, stdout } = await new Deno.Command(Deno.execPath(), {
    args: ["task", "--quiet", "ops", "coverage"],
    cwd: new URL("../../", import.meta.url),
    env: { DATABASE_URL: db.url },
    stdin: "null",
  }).output();
  assert.equal(code, 0);
  assert.match(new TextDecoder().decode(stdout), /thread_digest__fetch_posts +0 +1 {2}MISSING/);
});

Deno.test("ops flows reset refuses a flow with active runs, deletes it with --force, and names an unknown slug", async () => {
  await using db = await freshDatabase();
  await compile(db.sql, threadDigest);
  await db.sql`select sluice.start_flow('thread_digest', '{"threadId": "t1", "posts": []}'::jsonb)`;
  const refused = await ops(db.url, "flows", "reset", "thread_digest");
  assert.equal(refused.code, 1);
  assert.match(
    refused.err,
    /^Cannot delete flow "thread_digest": 1 active run\(s\);.* or pass --force$/,
  );
  const reset = await ops(db.url, "flows", "reset", "thread_digest", "--force");
  assert.equal(reset.code, 0, reset.err);
  assert.equal(reset.out, 'Deleted flow "thread_digest" with all its runs, tasks and queues.');
  const [{ flows, runs }] = await db.sql`
    select (select count(*)::int from sluice.flows) as flows,
           (select count(*)::int from sluice.runs) as runs`;
  assert.deepEqual({ flows, runs }, { flows: 0, runs: 0 });

  const unknown = await ops(db.url, "flows", "reset", "thread_digest");
  assert.equal(unknown.code, 1);
  assert.equal(unknown.err, 'Cannot reset flow "thread_digest": no flow has that slug (see runs)');
});
