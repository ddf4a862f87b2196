// Runs every command of docs/ops.md, docs/run_control.md, docs/dashboard.md, docs/edge.md,
// docs/rollout.md, docs/monitoring.md, docs/versions.md and docs/schedules.md, in document order, in a temporary
// user project that has no sluice checkout (tests/docs/_guides.ts: sluice installed from a
// JSR-shaped loopback registry of the published files, with the `sluice` task install writes),
// against real workers of the example flows and their next versions: each `sh` command as written
// through bash, each `sql` block as written. The few
// commands that need git or Supabase's hosted platform have a stand-in, listed below; the local
// Supabase database the guides name is the test's database. A command the docs add without a way
// to run it here fails this test, so docs and test stay in sync.
import assert from "node:assert/strict";
import { defineDeployedFlow, Flow, startFlow, waitForRun, withStepQueues } from "../../mod.ts";
import { greetUser, type Post, threadDigest } from "../../examples/flows.ts";
import type { DeployableFlow } from "../../src/dsl/types.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { type TestWorker, testWorker, waitUntil } from "../worker/_helpers.ts";
import { serveRegistry } from "../cli/_registry.ts";
import {
  codeBlocks,
  guideCommands,
  LOCAL_SUPABASE_DB,
  shellCommands,
  UserProjectShell,
} from "../docs/_guides.ts";
import { scaled } from "../_support.ts";

const REPO = new URL("../../", import.meta.url);
const MANIFEST = "supabase/functions/sluice.manifest.json";

/** The next version of greet_user, deployed under its name, for the new-version sequences. */
const greetUserV2 = defineDeployedFlow(
  new Flow<{ name: string }>({ slug: "greet_user_v2" })
    .step({ slug: "compose" }, (input) => `Hi, ${input.name}!`),
  { alias: "greet_user" },
);

/** The next version of thread_digest, deployed under its name (docs/versions.md). */
const threadDigestV2 = defineDeployedFlow(
  withStepQueues(
    new Flow<{ threadId: string; posts: Post[] }>({ slug: "thread_digest_v2", timeout: 30 })
      .array({ slug: "fetch_posts" }, (input) => input.posts)
      .map({ slug: "classify", array: "fetch_posts" }, (post) => post.text.length)
      .step({ slug: "deliver", dependsOn: ["classify"] }, (deps) => ({ posts: deps.classify })),
  ),
  { alias: "thread_digest" },
);

/**
 * What a user adds to the flows module before each `sluice functions generate` of the docs: the
 * source of the versions above (the in-process workers run the same definitions).
 */
const V2_SOURCE = {
  greetUser: `
export const greetUserV2 = defineDeployedFlow(
  new Flow<{ name: string }>({ slug: "greet_user_v2" })
    .step({ slug: "compose" }, (input) => \`Hi, \${input.name}!\`),
  { alias: "greet_user" },
);
`,
  threadDigest: `
export const threadDigestV2 = defineDeployedFlow(
  withStepQueues(
    new Flow<{ threadId: string; posts: Post[] }>({ slug: "thread_digest_v2", timeout: 30 })
      .array({ slug: "fetch_posts" }, (input) => input.posts)
      .map({ slug: "classify", array: "fetch_posts" }, (post) => post.text.length)
      .step({ slug: "deliver", dependsOn: ["classify"] }, (deps) => ({ posts: deps.classify })),
  ),
  { alias: "thread_digest" },
);
`,
};

/** Every worker function of the scenarios: its flow and, for a step function, its step. */
const FUNCTIONS: Record<string, { flow: DeployableFlow; stepSlug?: string }> = {
  "greet-user": { flow: greetUser },
  "thread-digest--fetch-posts": { flow: threadDigest, stepSlug: "fetch_posts" },
  "thread-digest--classify": { flow: threadDigest, stepSlug: "classify" },
  "thread-digest--deliver": { flow: threadDigest, stepSlug: "deliver" },
  "greet-user-v2": { flow: greetUserV2 },
  "thread-digest-v2--fetch-posts": { flow: threadDigestV2, stepSlug: "fetch_posts" },
  "thread-digest-v2--classify": { flow: threadDigestV2, stepSlug: "classify" },
  "thread-digest-v2--deliver": { flow: threadDigestV2, stepSlug: "deliver" },
};

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

class Scenario implements AsyncDisposable {
  readonly workers: TestWorker[] = [];
  /** Documented commands run, per guide. */
  readonly counts: Record<string, number> = {};
  readonly #served: Deno.ChildProcess[] = [];

  /**
   * @param additions The flow sources each `deno task sluice functions generate` of the docs
   * follows, in order.
   * @param redeploy Whether a sequence starting with `sluice functions generate` first redeploys
   * every function (rollout.md's new-version sequence starts from a healthy deploy, whatever the
   * sections before did); versions.md's sequences follow each other.
   */
  private constructor(
    readonly db: TestDatabase,
    readonly project: UserProjectShell,
    readonly additions: string[],
    readonly redeploy: boolean,
    readonly registry: AsyncDisposable,
  ) {}

  /** A user project with the example flows module and its generated functions. */
  static async create(additions: string[], redeploy: boolean): Promise<Scenario> {
    const db = await freshDatabase();
    const registry = await serveRegistry();
    const project = await UserProjectShell.create(registry, { DATABASE_URL: db.url });
    const flows = (await Deno.readTextFile(new URL("examples/flows.ts", REPO))).replace(
      'import { Flow, withStepQueues } from "@sluice/sluice";',
      'import { defineDeployedFlow, Flow, withStepQueues } from "@sluice/sluice";',
    );
    await Deno.writeTextFile(`${project.dir}/supabase/functions/_shared/flows.ts`, flows);
    await project.run("deno task sluice functions generate");
    return new Scenario(db, project, additions, redeploy, registry);
  }

  async manifest(): Promise<{ functions: { function_name: string }[] }> {
    return JSON.parse(await Deno.readTextFile(`${this.project.dir}/${MANIFEST}`));
  }

  async start(name: string): Promise<void> {
    const { flow, stepSlug } = FUNCTIONS[name];
    this.workers.push(await testWorker(flow, this.db, stepSlug === undefined ? {} : { stepSlug }));
  }

  /** Enables every function of the manifest and starts a worker where none serves it. */
  async deployAll(): Promise<void> {
    const names = (await this.manifest()).functions.map((entry) => entry.function_name);
    await this.db.sql`update sluice.worker_functions set enabled = true`;
    const serving = await this.db.sql<{ function_name: string }[]>`
      select function_name from sluice.worker_function_drain where serving_workers > 0
    `;
    for (const name of names) {
      if (!serving.some((row) => row.function_name === name)) await this.start(name);
    }
  }

  /** Stand-ins for the documented commands that need git or Supabase's hosted platform. */
  readonly standIns: Record<string, () => Promise<void>> = {
    "git show v1.4.0:supabase/functions/sluice.manifest.json > old.manifest.json": () =>
      Deno.copyFile(`${this.project.dir}/${MANIFEST}`, `${this.project.dir}/old.manifest.json`),
    "supabase functions deploy": () => this.deployAll(),
    "supabase functions deploy greet-user-v2": () => this.start("greet-user-v2"),
    "supabase functions deploy thread-digest-v2--fetch-posts thread-digest-v2--classify thread-digest-v2--deliver":
      async () => {
        for (const step of ["fetch-posts", "classify", "deliver"]) {
          await this.start(`thread-digest-v2--${step}`);
        }
      },
    // The secret goes into the functions' environment, as `supabase secrets set` does.
    'supabase secrets set SLUICE_WORKER_SECRET="$(openssl rand -hex 32)"': async () => {
      this.project.env.SLUICE_WORKER_SECRET = await this.project.run("openssl rand -hex 32")
        .then((out) => out.trim());
    },
    // The deployed function: the generated greet-user served by plain Deno at $SUPABASE_URL.
    "supabase functions deploy greet-user": async () => {
      const port = freePort();
      this.project.env.SUPABASE_URL = `http://127.0.0.1:${port}`;
      const { child } = await this.project.spawn(
        `PORT=${port} deno run -A supabase/functions/greet-user/index.ts`,
        () => fetch(`http://127.0.0.1:${port}/`).then((r) => r.body?.cancel()).then(() => true),
      );
      this.#served.push(child);
    },
    // The dashboard on a free port (4300 may be taken here); it must answer with its token.
    "deno task sluice dashboard": async () => {
      const { child, lines, done } = await this.project.spawn(
        "deno task sluice dashboard --port 0",
        /open http:\/\/127\.0\.0\.1:\d+\/[0-9a-f]+\/\?token=/,
      );
      const url = /open (http:\/\/\S+)/.exec(lines.find((l) => l.includes("open http"))!)![1];
      // The printed address (under the start's random base path) trades its token for a session
      // cookie and redirects to the page.
      const response = await fetch(url, { redirect: "manual" });
      await response.body?.cancel();
      assert.ok(response.status < 400 && response.headers.has("set-cookie"), url);
      const code = await this.project.stop(child, "SIGINT");
      // Its last lines (an error on the way out) arrive after the exit: read them to the end.
      await done;
      assert.equal(code, 0, `exit ${code}:\n${lines.join("\n")}`);
    },
  };

  /** Commands that run until stopped: started, checked, stopped; exit code 0. */
  readonly longRunning: Record<string, (line: string) => Promise<void>> = {
    "deno run -A supabase/functions/greet-user/index.ts": async (line) => {
      const port = freePort();
      const { child, lines } = await this.project.spawn(
        `PORT=${port} ${line}`,
        /"worker started"/,
      );
      assert.equal(await this.project.stop(child, "SIGTERM"), 0, lines.join("\n"));
    },
  };

  /** Runs one documented command in the user project. */
  async command(documented: string): Promise<void> {
    const standIn = this.standIns[documented];
    if (standIn !== undefined) return await standIn();
    const line = documented.replaceAll(LOCAL_SUPABASE_DB, this.db.url);
    const exported = /^export ([A-Z_]+)=(\S+)$/.exec(line);
    if (exported !== null) {
      this.project.env[exported[1]] = exported[2];
      return;
    }
    const longRunning = Object.entries(this.longRunning).find(([end]) => line.endsWith(end));
    if (longRunning !== undefined) return await longRunning[1](line);
    if (line === "deno task sluice functions generate") {
      // The docs' step before it: add the new version's export to the flows module.
      const addition = this.additions.shift() ?? assert.fail("no flow version left to add");
      await Deno.writeTextFile(
        `${this.project.dir}/supabase/functions/_shared/flows.ts`,
        addition,
        { append: true },
      );
    }
    if (!/^(deno task sluice |curl )/.test(line)) {
      assert.fail(`no way to run ${JSON.stringify(documented)} in a user project; add a stand-in`);
    }
    const output = await this.project.run(line);
    if (line.startsWith("curl ")) assert.match(output, /"status":"running"/);
  }

  async runDoc(path: string): Promise<number> {
    let commands = 0;
    for (const block of codeBlocks(await Deno.readTextFile(new URL(path, REPO)))) {
      if (block.lang === "sql") {
        await this.db.sql.unsafe(block.body);
        commands++;
      }
      if (block.lang !== "sh") continue;
      const lines = shellCommands(block.body);
      if (this.redeploy && lines[0] === "deno task sluice functions generate") {
        await this.deployAll();
      }
      for (const line of lines) {
        await this.command(line);
        commands++;
      }
    }
    assert.equal(
      commands,
      guideCommands(path).length +
        codeBlocks(await Deno.readTextFile(new URL(path, REPO))).filter((b) => b.lang === "sql")
          .length,
    );
    this.counts[path] = commands;
    return commands;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    for (const child of this.#served) await this.project.stop(child, "SIGTERM");
    await Promise.all(this.workers.map((worker) => worker.stop()));
    await this.project[Symbol.asyncDispose]();
    await this.registry[Symbol.asyncDispose]();
    await this.db[Symbol.asyncDispose]();
  }
}

/**
 * docs/run_control.md on the flow `orders` it names: a run whose handler waits for its signal is
 * cancelled (the signal aborts), listed, shown, retried (the handler runs again), and cancelled
 * again with the flow's other started runs.
 */
async function runControlDoc(scenario: Scenario): Promise<void> {
  const { db } = scenario;
  const executions: string[] = [];
  const orders = new Flow<{ id: number }>({ slug: "orders", timeout: 60 })
    .step({ slug: "charge" }, async (_input, ctx) => {
      executions.push(`attempt ${ctx.attempt}`);
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
      executions.push(`aborted: ${(ctx.signal.reason as Error).message}`);
      throw ctx.signal.reason;
    });
  const worker = await testWorker(orders, db);
  const runId = await startFlow(db.sql, orders, { id: 1 });
  await waitUntil(() => executions.length === 1, "the order's handler to start");
  const completedRun = scenario.project.env.RUN_ID;
  scenario.project.env.RUN_ID = runId;
  try {
    assert.equal(await scenario.runDoc("docs/run_control.md"), 5);
  } finally {
    scenario.project.env.RUN_ID = completedRun;
  }
  await waitUntil(() => executions.length === 4, "the retried attempt's abort");
  assert.equal(executions[0], "attempt 1");
  assert.match(executions[1], /was cancelled: duplicate order/);
  assert.equal(executions[2], "attempt 2");
  assert.match(executions[3], /was cancelled: superseded by orders_v2/);
  const [run] = await db.sql`
    select status, cancel_reason, retry_count from sluice.runs where run_id = ${runId}`;
  assert.deepEqual({ ...run }, {
    status: "cancelled",
    cancel_reason: "superseded by orders_v2",
    retry_count: 1,
  });
  // The guides after this one see the example flows only.
  await worker.stop();
  await db.sql`select sluice.delete_flow_and_data('orders', force => true)`;
  await db.sql`delete from sluice.workers where function_name = ${worker.functionName}`;
  await db.sql`delete from sluice.worker_functions where function_name = ${worker.functionName}`;
}

Deno.test("every command of docs/ops.md, run_control.md, dashboard.md, edge.md, rollout.md and monitoring.md runs in a user project against real workers", async () => {
  await using scenario = await Scenario.create([V2_SOURCE.greetUser], true);
  const { db } = scenario;
  await scenario.deployAll();
  const [{ run_id }] = await db
    .sql`select sluice.start_flow('greet_user', '{"name": "Ada"}') as run_id`;
  scenario.project.env.RUN_ID = run_id;
  await waitUntil(async () => {
    const [run] = await db.sql`select status from sluice.runs where run_id = ${run_id}`;
    return run.status === "completed" || null;
  }, "the example run to complete");

  // Every route is served here, which ops.md's jq check of coverage requires.
  assert.ok(await scenario.runDoc("docs/ops.md") >= 4);
  await runControlDoc(scenario);
  assert.ok(await scenario.runDoc("docs/dashboard.md") >= 2);
  // edge.md schedules a keepalive with pg_cron and pg_net, which Supabase offers: stand-ins
  // with their signatures let the statement run as written.
  await db.sql.unsafe(`
    create schema cron;
    create function cron.schedule(job_name text, schedule text, command text) returns bigint
      language sql as 'select 1::bigint';
    create schema net;
    create function net.http_post(url text, headers jsonb) returns bigint
      language sql as 'select 1::bigint';
  `);
  assert.ok(await scenario.runDoc("docs/edge.md") >= 6);
  assert.ok(await scenario.runDoc("docs/rollout.md") >= 20);
  const [{ enabled }] = await db.sql`
    select enabled from sluice.worker_functions where function_name = 'greet-user'
  `;
  assert.equal(enabled, false, "the old version was retired");
  // The callers' name now starts the new version.
  const next = await startFlow(db.sql, greetUserV2, { name: "Grace" });
  assert.deepEqual(
    await waitForRun(db.sql, next, { timeoutMs: scaled(15_000), flow: greetUserV2 }),
    {
      compose: "Hi, Grace!",
    },
  );
  const [started] = await db
    .sql`select flow_slug, started_via from sluice.runs where run_id = ${next}`;
  assert.deepEqual({ ...started }, { flow_slug: "greet_user_v2", started_via: "greet_user" });

  // A stray message on a live step queue pauses its function: the monitoring doc's way out.
  const [{ id }] = await db.sql`
    select pgmq.send('thread_digest__classify', '{"stray": true}')::text as id
  `;
  scenario.project.env.MESSAGE_ID = id;
  await waitUntil(async () => {
    const [row] = await db.sql`
      select restart_paused_at from sluice.worker_functions
      where function_name = 'thread-digest--classify'
    `;
    return row.restart_paused_at;
  }, "the classify function to pause on the stray message");
  assert.ok(await scenario.runDoc("docs/monitoring.md") >= 18);
  const [paused] = await db.sql`
    select restart_paused_at from sluice.worker_functions
    where function_name = 'thread-digest--classify'
  `;
  assert.equal(paused.restart_paused_at, null);
  const [archived] = await db.sql`
    select count(*)::integer as count from pgmq.a_thread_digest__classify where msg_id = ${id}
  `;
  assert.equal(archived.count, 1);
  console.log(`documented commands run in a user project: ${JSON.stringify(scenario.counts)}`);
});

Deno.test("every command of docs/versions.md runs against real workers: both versions switch through their alias", async () => {
  await using scenario = await Scenario.create(
    [V2_SOURCE.greetUser, V2_SOURCE.threadDigest],
    false,
  );
  const { db } = scenario;
  await scenario.deployAll();
  // Runs started by the callers' names before the switch, on the first versions.
  const posts = [{ id: 1, text: "why?" }, { id: 2, text: "ok" }];
  const before = [
    await startFlow(db.sql, greetUserV2, { name: "Ada" }),
    await startFlow(db.sql, threadDigestV2, { threadId: "t1", posts }),
  ];

  assert.ok(await scenario.runDoc("docs/versions.md") >= 18);

  const runs = await db.sql`
    select flow_slug, started_via, status from sluice.runs
    where run_id = any(${before}::uuid[]) order by started_via`;
  // greet_user's runs went with its definition (delete_flow_and_data); thread_digest's stayed.
  assert.deepEqual(runs.map((run) => ({ ...run })), [
    { flow_slug: "thread_digest", started_via: "thread_digest", status: "completed" },
  ]);
  const after = [
    await startFlow(db.sql, greetUserV2, { name: "Grace" }),
    await startFlow(db.sql, threadDigestV2, { threadId: "t2", posts }),
  ];
  assert.deepEqual(
    await waitForRun(db.sql, after[0], { timeoutMs: scaled(15_000), flow: greetUserV2 }),
    {
      compose: "Hi, Grace!",
    },
  );
  assert.deepEqual(
    await waitForRun(db.sql, after[1], { timeoutMs: scaled(15_000), flow: threadDigestV2 }),
    { deliver: { posts: [4, 2] } },
  );
  const aliases = await db.sql`
    select alias, flow_slug, generation::int as generation from sluice.aliases
    where alias in ('greet_user', 'thread_digest') order by alias`;
  assert.deepEqual(aliases.map((row) => ({ ...row })), [
    { alias: "greet_user", flow_slug: "greet_user_v2", generation: 2 },
    { alias: "thread_digest", flow_slug: "thread_digest_v2", generation: 2 },
  ]);
  const [{ workers }] = await db.sql`
    select count(*)::int as workers from sluice.live_workers where flow_slug = 'thread_digest'`;
  assert.equal(workers, 0, "the old thread_digest workers were drained");
  console.log(`documented commands run in a user project: ${JSON.stringify(scenario.counts)}`);
});

Deno.test("every command of docs/schedules.md runs in a user project: the schedule it creates fires through the alias", async () => {
  await using scenario = await Scenario.create([], false);
  const { db } = scenario;
  await scenario.deployAll();
  // The pg_cron statement runs as written against a stand-in with pg_cron's signature (edge.md's
  // test does the same); tests/sql/schedules_pg_cron_test.ts runs it on the real pg_cron.
  await db.sql.unsafe(`
    create schema cron;
    create function cron.schedule(job_name text, schedule text, command text) returns bigint
      language sql as 'select 1::bigint';
  `);
  // Stop before the last command (delete): the schedule the guide created must fire.
  const doc = "docs/schedules.md";
  const lines = guideCommands(doc);
  assert.equal(lines.at(-1), "deno task sluice schedules delete nightly_greeting");
  for (const block of codeBlocks(await Deno.readTextFile(new URL(doc, REPO)))) {
    if (block.lang === "sql") await db.sql.unsafe(block.body);
  }
  for (const line of lines.slice(0, -1)) await scenario.command(line);
  const [row] = await db.sql`
    select target_kind, target, cron, timezone, input, paused_at, next_due_at
    from sluice.schedules where schedule_name = 'nightly_greeting'`;
  assert.deepEqual(
    [row.target_kind, row.target, row.cron, row.timezone, row.input, row.paused_at],
    ["alias", "greet_user", "0 3 * * *", "Europe/Berlin", { name: "Ada" }, null],
  );
  // Its next tick, fired with that time as now (a heartbeat may fire it first, if the test runs
  // at that very time), starts a run on real workers.
  await db.sql`select * from sluice.fire_due_schedules(${row.next_due_at}::timestamptz)`;
  const [{ run_id }] = await db.sql`
    select run_id from sluice.schedule_ticks
    where schedule_name = 'nightly_greeting' and due_at = ${row.next_due_at}`;
  assert.deepEqual(
    await waitForRun(db.sql, run_id, { timeoutMs: scaled(15_000), flow: greetUser }),
    {
      record: { greeting: "Hello, Ada!", length: 11 },
    },
  );
  await scenario.command(lines.at(-1)!);
  const [{ count }] = await db.sql`select count(*)::int as count from sluice.schedules`;
  assert.equal(count, 0);
});
