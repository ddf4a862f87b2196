// Runs every command of docs/rollout.md, docs/monitoring.md and docs/versions.md, in document
// order, against real workers of the example flows and their next versions: each `sh` line
// through the real CLI process (a few lines that need a Supabase project or git are stood in for,
// listed below), each `sql` block as written. A command the docs add without a stand-in here fails
// this test, so docs and test stay in sync.
import assert from "node:assert/strict";
import { fileURLToPath as fromFileUrl } from "node:url";
import { defineDeployedFlow, Flow, startFlow, waitForRun, withStepQueues } from "../../mod.ts";
import { greetUser, type Post, threadDigest } from "../../examples/flows.ts";
import { resolveWorkerTarget } from "../../src/worker/mod.ts";
import type { DeployableFlow } from "../../src/dsl/types.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { type TestWorker, testWorker, waitUntil } from "../worker/_helpers.ts";

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

/** The manifest entry `deno task sluice functions generate` writes for a function of {@linkcode FUNCTIONS}. */
function manifestEntry(name: string) {
  const { flow, stepSlug } = FUNCTIONS[name];
  const target = (resolveWorkerTarget as (
    flow: DeployableFlow,
    options: { functionName: string; stepSlug?: string },
  ) => ReturnType<typeof resolveWorkerTarget>)(flow, { functionName: name, stepSlug });
  return {
    function_name: name,
    flow_slug: target.flowSlug,
    step_slug: target.stepSlug,
    queue_name: target.queueName,
    queue_mode: target.stepSlug === null ? "flow" : "step",
    ...(target.alias === null ? {} : { alias: target.alias }),
  };
}

/** The fenced code blocks of a Markdown file, with their info string. */
function codeBlocks(markdown: string): { lang: string; body: string }[] {
  return [...markdown.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)]
    .map((match) => ({ lang: match[1], body: match[2] }));
}

/** Splits a shell line into words: '…' and "…" quoting, "$NAME" from `vars`. */
function shellWords(line: string, vars: Record<string, string>): string[] {
  const words: string[] = [];
  for (const match of line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)) {
    const word = match[1] ?? (match[2] ?? match[3]).replace(
      /\$([A-Z_]+)/g,
      (_, name: string) => vars[name] ?? assert.fail(`no value for $${name} in: ${line}`),
    );
    words.push(word);
  }
  return words;
}

class Scenario {
  readonly workers: TestWorker[] = [];
  readonly vars: Record<string, string> = {};

  /**
   * @param generations The functions each `deno task sluice functions generate` of the doc adds, in order.
   * @param redeploy Whether a sequence starting with `sluice functions generate` first redeploys every
   * function (rollout.md's new-version sequence starts from a healthy deploy, whatever the
   * sections before did); versions.md's sequences follow each other.
   */
  constructor(
    readonly db: TestDatabase,
    readonly dir: string,
    readonly generations: string[][],
    readonly redeploy: boolean,
  ) {}

  async manifest(): Promise<{ functions: { function_name: string }[] }> {
    return JSON.parse(await Deno.readTextFile(`${this.dir}/${MANIFEST}`));
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

  /** Stand-ins for the documented lines that need git or a Supabase project. */
  readonly standIns: Record<string, () => Promise<void>> = {
    "git show v1.4.0:supabase/functions/sluice.manifest.json > old.manifest.json": () =>
      Deno.copyFile(`${this.dir}/${MANIFEST}`, `${this.dir}/old.manifest.json`),
    "supabase functions deploy": () => this.deployAll(),
    "deno task sluice functions generate": async () => {
      const added = this.generations.shift() ?? assert.fail("no functions left to generate");
      const manifest = await this.manifest();
      manifest.functions.push(...added.map(manifestEntry));
      await Deno.writeTextFile(`${this.dir}/${MANIFEST}`, JSON.stringify(manifest));
    },
    "supabase functions deploy greet-user-v2": () => this.start("greet-user-v2"),
    "supabase functions deploy thread-digest-v2--fetch-posts thread-digest-v2--classify thread-digest-v2--deliver":
      async () => {
        for (const step of ["fetch-posts", "classify", "deliver"]) {
          await this.start(`thread-digest-v2--${step}`);
        }
      },
  };

  /** Runs one documented `deno task sluice` line as a process in the project directory. */
  async ops(line: string): Promise<void> {
    const [deno, task, sluice, ...args] = shellWords(line, this.vars);
    assert.deepEqual([deno, task, sluice], ["deno", "task", "sluice"], line);
    const result = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "--config",
        fromFileUrl(new URL("deno.json", REPO)),
        fromFileUrl(new URL("cli.ts", REPO)),
        ...args,
      ],
      cwd: this.dir,
      env: { DATABASE_URL: this.db.url, NO_COLOR: "1" },
      stdin: "null",
    }).output();
    const output = new TextDecoder().decode(result.stdout) +
      new TextDecoder().decode(result.stderr);
    assert.equal(result.code, 0, `${line} exited ${result.code}:\n${output}`);
  }

  async runDoc(path: string): Promise<number> {
    let commands = 0;
    for (const block of codeBlocks(await Deno.readTextFile(new URL(path, REPO)))) {
      if (block.lang === "sql") {
        await this.db.sql.unsafe(block.body);
        commands++;
      }
      if (block.lang !== "sh") continue;
      if (this.redeploy && block.body.startsWith("deno task sluice functions generate")) {
        await this.deployAll();
      }
      for (const line of block.body.split("\n").filter((text) => text.trim() !== "")) {
        const standIn = this.standIns[line];
        if (standIn !== undefined) await standIn();
        else if (line.startsWith("deno task sluice ")) await this.ops(line);
        else assert.fail(`${path}: no way to run ${JSON.stringify(line)}; add a stand-in`);
        commands++;
      }
    }
    return commands;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await Promise.all(this.workers.map((worker) => worker.stop()));
    await Deno.remove(this.dir, { recursive: true });
  }
}

Deno.test("every command of docs/rollout.md and docs/monitoring.md runs against real workers", async () => {
  await using db = await freshDatabase();
  const dir = await Deno.makeTempDir();
  await Deno.mkdir(`${dir}/supabase/functions`, { recursive: true });
  await Deno.copyFile(new URL(MANIFEST, REPO), `${dir}/${MANIFEST}`);
  await using scenario = new Scenario(db, dir, [["greet-user-v2"]], true);
  await scenario.deployAll();
  const [{ run_id }] = await db
    .sql`select sluice.start_flow('greet_user', '{"name": "Ada"}') as run_id`;
  scenario.vars.RUN_ID = run_id;
  await waitUntil(async () => {
    const [run] = await db.sql`select status from sluice.runs where run_id = ${run_id}`;
    return run.status === "completed" || null;
  }, "the example run to complete");

  assert.ok(await scenario.runDoc("docs/rollout.md") >= 20);
  const [{ enabled }] = await db.sql`
    select enabled from sluice.worker_functions where function_name = 'greet-user'
  `;
  assert.equal(enabled, false, "the old version was retired");
  // The callers' name now starts the new version.
  const next = await startFlow(db.sql, greetUserV2, { name: "Grace" });
  assert.deepEqual(await waitForRun(db.sql, next, { timeoutMs: 15_000, flow: greetUserV2 }), {
    compose: "Hi, Grace!",
  });
  const [started] = await db
    .sql`select flow_slug, started_via from sluice.runs where run_id = ${next}`;
  assert.deepEqual({ ...started }, { flow_slug: "greet_user_v2", started_via: "greet_user" });

  // A stray message on a live step queue pauses its function: the monitoring doc's way out.
  const [{ id }] = await db.sql`
    select pgmq.send('thread_digest__classify', '{"stray": true}')::text as id
  `;
  scenario.vars.MESSAGE_ID = id;
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
});

Deno.test("every command of docs/versions.md runs against real workers: both versions switch through their alias", async () => {
  await using db = await freshDatabase();
  const dir = await Deno.makeTempDir();
  await Deno.mkdir(`${dir}/supabase/functions`, { recursive: true });
  await Deno.copyFile(new URL(MANIFEST, REPO), `${dir}/${MANIFEST}`);
  await using scenario = new Scenario(db, dir, [
    ["greet-user-v2"],
    ["thread-digest-v2--fetch-posts", "thread-digest-v2--classify", "thread-digest-v2--deliver"],
  ], false);
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
  assert.deepEqual(await waitForRun(db.sql, after[0], { timeoutMs: 15_000, flow: greetUserV2 }), {
    compose: "Hi, Grace!",
  });
  assert.deepEqual(
    await waitForRun(db.sql, after[1], { timeoutMs: 15_000, flow: threadDigestV2 }),
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
});
