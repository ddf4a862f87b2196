// sluice in a user's own Supabase project, end to end. The project is a temporary directory with
// supabase/ and no sluice checkout; sluice comes from a JSR-shaped loopback registry of exactly the
// files `deno publish` would upload (tests/cli/_registry.ts), which every command of the project
// reaches through Deno's JSR_URL, as it would reach jsr.io. The page's install command runs as
// written, and everything after it goes through what it wrote: the project's deno.json mapping
// @sluice/sluice to jsr:@sluice/sluice@<version> and its "sluice" task, and the generated
// functions' own jsr: imports. Nothing is imported from this checkout by path.
// Supabase's own migration runner is the real Supabase CLI from npm (scripts/setup.sh installs it).
// Every command of docs/getting_started.md runs here, in its order; the few that need Supabase's
// hosted platform or Docker have a stand-in, listed in STAND_INS.
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { installPgmq } from "../../src/migrations/install_pgmq.ts";
import { MIGRATION_FILES } from "../../src/migrations/migration_files.ts";
import { freshDatabase, installedPgmq, type TestDatabase } from "../_db.ts";
import { lineReader, waitUntil } from "../_support.ts";
import type { JsrServer } from "../../dev/jsr_server.ts";
import { documentedInstall, serveRegistry } from "./_registry.ts";

const ROOT = new URL("../../", import.meta.url);
const SUPABASE_VERSION = "2.122.1";

/** Documented commands that need Docker or Supabase's platform, and what the test does instead. */
const STAND_INS: Record<string, string> = {
  "supabase init": "creates supabase/ by hand",
  "supabase start": "uses a fresh database of the test server as DATABASE_URL",
  "supabase functions serve":
    "runs each generated function with the page's plain-Deno command (its deno.json, PORT, .env)",
  "supabase functions deploy": "the import graph check (deno info) stands in for the upload",
  "supabase secrets set SLUICE_WORKER_SECRET=...": "the secret is in supabase/functions/.env",
};

function supabaseCli(): string {
  const path = Deno.env.get("SLUICE_SUPABASE_CLI") ??
    new URL(".tools/supabase/node_modules/.bin/supabase", ROOT).pathname;
  try {
    Deno.statSync(path);
  } catch {
    throw new Error(
      `Cannot find the Supabase CLI ${SUPABASE_VERSION} at ${path}: run bash scripts/setup.sh`,
    );
  }
  return path;
}

function codeBlocks(markdown: string, lang: string): string[] {
  return [...markdown.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)]
    .filter((match) => match[1] === lang).map((match) => match[2]);
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/** `supabase migration up` reaches the test database instead of the Docker one. */
function supabaseArgs(args: string[], databaseUrl: string): string[] {
  if (args.join(" ") !== "migration up") return args;
  return [...args, "--db-url", `${databaseUrl}?sslmode=disable`];
}

class UserProject {
  readonly ran = new Set<string>();
  constructor(readonly dir: string, readonly env: Record<string, string>) {}

  /** Runs a documented command line in the project; `supabase` is the npm CLI. */
  async sh(line: string, extraEnv: Record<string, string> = {}): Promise<string> {
    const { stdout, stderr } = await this.#exec(line, extraEnv);
    return stdout + stderr;
  }

  /** Runs a command line like `sh` and parses its standard output (Deno logs to stderr). */
  async json<T>(line: string): Promise<T> {
    return JSON.parse((await this.#exec(line, {})).stdout);
  }

  async #exec(
    line: string,
    extraEnv: Record<string, string>,
  ): Promise<{ stdout: string; stderr: string }> {
    this.ran.add(line);
    const [program, ...args] = line.split(" ");
    const command = program === "supabase" ? supabaseCli() : Deno.execPath();
    const env = { ...this.env, ...extraEnv };
    const { code, stdout, stderr } = await new Deno.Command(command, {
      args: program === "supabase" ? supabaseArgs(args, env.DATABASE_URL) : args,
      cwd: this.dir,
      env,
      clearEnv: true,
      stdin: "null",
      // A hung command fails the test with its output instead of hanging it.
      signal: AbortSignal.timeout(120_000),
    }).output();
    const out = {
      stdout: new TextDecoder().decode(stdout),
      stderr: new TextDecoder().decode(stderr),
    };
    assert.equal(code, 0, `${line} failed:\n${out.stdout}${out.stderr}`);
    return out;
  }

  /** Runs a documented command line through bash, as a user types it; it must exit 0. */
  async bash(line: string): Promise<string> {
    this.ran.add(line);
    const { code, stdout, stderr } = await new Deno.Command("bash", {
      args: ["-c", line],
      cwd: this.dir,
      env: this.env,
      clearEnv: true,
      stdin: "null",
      signal: AbortSignal.timeout(120_000),
    }).output();
    const out = new TextDecoder().decode(stdout) + new TextDecoder().decode(stderr);
    assert.equal(code, 0, `${line} failed:\n${out}`);
    return out;
  }

  /**
   * Starts a long-running command of the package CLI with its output piped, and records
   * `documented` as run: the command line of the project's `sluice` task (install's) run directly,
   * so that a signal reaches the CLI itself rather than `deno task`.
   */
  async spawnSluice(args: string[], documented: string): Promise<Deno.ChildProcess> {
    this.ran.add(documented);
    const task: string = JSON.parse(await this.read("deno.json")).tasks.sluice;
    const [program, ...taskArgs] = task.split(" ");
    assert.equal(program, "deno", `the sluice task runs deno: ${task}`);
    return new Deno.Command(Deno.execPath(), {
      args: [...taskArgs, ...args],
      cwd: this.dir,
      env: this.env,
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
  }

  async write(path: string, text: string): Promise<void> {
    await Deno.mkdir(join(this.dir, path, ".."), { recursive: true });
    await Deno.writeTextFile(join(this.dir, path), text);
  }

  read(path: string): Promise<string> {
    return Deno.readTextFile(join(this.dir, path));
  }

  /** Every file of the project (but Deno's lockfile), path -> text. */
  async snapshot(): Promise<Map<string, string>> {
    const files = new Map<string, string>();
    const walk = async (dir: string) => {
      for await (const entry of Deno.readDir(join(this.dir, dir))) {
        const path = dir === "" ? entry.name : `${dir}/${entry.name}`;
        if (entry.isDirectory) await walk(path);
        else if (path !== "deno.lock") files.set(path, await this.read(path));
      }
    };
    await walk("");
    return files;
  }
}

/** A database as a new Supabase project has it: PGMQ offered by the server. */
async function supabaseLikeDatabase(): Promise<TestDatabase> {
  const db = await freshDatabase({ empty: true });
  // Supabase's server ships the pgmq extension; plain PostgreSQL in compat mode does not, so the
  // compat layer stands in for it before Supabase's runner applies sluice's first migration.
  if (installedPgmq() === "compat") await installPgmq(db.sql);
  return db;
}

async function newProject(registry: JsrServer, db: TestDatabase): Promise<UserProject> {
  const dir = await Deno.makeTempDir({ prefix: "sluice-user-project-" });
  const env: Record<string, string> = {
    HOME: Deno.env.get("HOME") ?? "/",
    PATH: Deno.env.get("PATH") ?? "",
    JSR_URL: registry.url,
    DATABASE_URL: db.url,
    NO_COLOR: "1",
    SUPABASE_TELEMETRY_DISABLED: "1",
    DO_NOT_TRACK: "1",
  };
  for (const name of ["DENO_DIR", "DENO_TLS_CA_STORE"]) {
    const value = Deno.env.get(name);
    if (value !== undefined) env[name] = value;
  }
  const project = new UserProject(dir, env);
  // `supabase init` stand-in, plus one migration of the user's own that is already applied.
  await Deno.mkdir(join(dir, "supabase/migrations"), { recursive: true });
  await project.write(
    "supabase/migrations/20250101000000_profiles.sql",
    "create table public.profiles (id bigint primary key, name text not null);\n",
  );
  return project;
}

const FLOWS = `import { Flow, withStepQueues } from "@sluice/sluice";

export const greetUser = withStepQueues(
  new Flow<{ name: string }>({ slug: "greet_user" })
    .step({ slug: "hello" }, (input) => \`Hello, \${input.name}\`)
    .step({ slug: "shout", dependsOn: ["hello"] }, (input) => input.hello.toUpperCase()),
);
`;

/** The flow after a shape change: one more step. */
const FLOWS_V2 = FLOWS.replace(
  "input.hello.toUpperCase()),",
  'input.hello.toUpperCase())\n    .step({ slug: "exclaim", dependsOn: ["shout"] }, (input) => `${input.shout}!`),',
);

/**
 * Runs one generated function with the page's plain-Deno command, through bash as a user types
 * it: the secret comes from supabase/functions/.env, the database from DATABASE_URL.
 */
function serveFunction(project: UserProject, line: string): Deno.ChildProcess {
  return new Deno.Command("bash", {
    args: ["-c", `exec env ${line}`],
    cwd: project.dir,
    env: { ...project.env, PATH: `${dirname(Deno.execPath())}:${project.env.PATH}` },
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
}

Deno.test("a user's Supabase project: install, migrate both ways, generate, serve, run", async () => {
  await using registry = await serveRegistry();
  await using db = await supabaseLikeDatabase();
  const project = await newProject(registry, db);
  const spec = `jsr:${registry.name}@${registry.version}`;
  const installLine = await documentedInstall(registry);
  const children: Deno.ChildProcess[] = [];
  try {
    // An existing project: its own migration is applied before sluice arrives.
    await project.sh("supabase migration up");

    // The newcomer path, timed (a figure for the record, not an assertion): install to a
    // completed run of a step-queued flow.
    const began = performance.now();
    const install = await project.sh(installLine);
    assert.match(install, /created supabase\/migrations\/\d+_20261130000000_pgmq_extension\.sql/);
    assert.match(install, /created supabase\/config\.toml with \[edge_runtime\]/);
    assert.match(install, /created deno\.json mapping @sluice\/sluice to jsr:@sluice\/sluice@/);
    assert.deepEqual(JSON.parse(await project.read("deno.json")), {
      imports: { "@sluice/sluice": spec },
      tasks: { sluice: `deno run -A --config deno.json ${spec}/cli` },
    });
    const names = [...Deno.readDirSync(join(project.dir, "supabase/migrations"))]
      .map((entry) => entry.name).sort();
    assert.equal(names[0], "20250101000000_profiles.sql", "the user's migration stays first");

    // sluice's runner first: it records its files for Supabase's, which then has nothing to do.
    const migrated = await project.sh("deno task sluice migrate");
    assert.match(
      migrated,
      /applied 20261130000100_sluice_definitions\.sql \(recorded for supabase/,
    );
    assert.match(await project.sh("supabase migration up"), /up to date/i);

    await project.write("supabase/functions/_shared/flows.ts", FLOWS);
    const generated = await project.sh("deno task sluice functions generate");
    assert.match(generated, /2 worker functions/);
    const toml = await project.read("supabase/config.toml");
    assert.match(toml, /\[functions\."greet-user--hello"\]\nenabled = true\nverify_jwt = false/);
    assert.match(toml, /policy = "per_worker"/);

    // What `supabase functions deploy` uploads: every local module of the graph must be inside
    // the project; the rest are the package's modules, from the registry through the function's
    // own jsr: imports, and npm packages.
    const published = `${registry.url}${registry.name}/${registry.version}/`;
    for (const name of ["greet-user--hello", "greet-user--shout"]) {
      const dir = `supabase/functions/${name}`;
      const own = JSON.parse(await project.read(`${dir}/deno.json`));
      assert.equal(own.imports["@sluice/sluice"], spec);
      const info = await project.json<{ modules: { specifier: string }[] }>(
        `deno info --json --no-lock --config ${dir}/deno.json ${dir}/index.ts`,
      );
      const projectUrl = `file://${project.dir}/`;
      for (const { specifier } of info.modules) {
        assert.ok(
          specifier.startsWith(projectUrl) || specifier.startsWith(published) ||
            specifier.startsWith("npm:") || specifier.startsWith("node:"),
          `${name} imports ${specifier}, outside the project and not from the registry`,
        );
      }
      assert.ok(info.modules.some((m) => m.specifier === `${projectUrl}${dir}/index.ts`));
      assert.ok(info.modules.some((m) => m.specifier === `${published}src/edge/mod.ts`));
    }

    // The secret, as the page writes it, in the .env that serving reads.
    const echo = 'echo "SLUICE_WORKER_SECRET=$(openssl rand -hex 32)" >> supabase/functions/.env';
    await project.bash(echo);
    const workerSecret = /^SLUICE_WORKER_SECRET=([0-9a-f]{64})$/m
      .exec(await project.read("supabase/functions/.env"))?.[1];
    assert.ok(workerSecret !== undefined, "the .env holds the secret");

    // Two step functions side by side with the page's plain-Deno command, each on its own port.
    const served = codeBlocks(
      await Deno.readTextFile(new URL("docs/getting_started.md", ROOT)),
      "sh",
    ).flatMap((block) => block.split("\n")).find((line) => line.startsWith("PORT=8001 "));
    assert.ok(served !== undefined, "getting_started.md serves a function with plain Deno");
    project.ran.add(served);
    const ports = [freePort(), freePort()];
    children.push(serveFunction(project, served.replace("PORT=8001", `PORT=${ports[0]}`)));
    children.push(
      serveFunction(
        project,
        served.replace("PORT=8001", `PORT=${ports[1]}`).replaceAll(
          "greet-user--hello",
          "greet-user--shout",
        ),
      ),
    );
    for (const port of ports) {
      await waitUntil(async () => {
        const response = await fetch(`http://127.0.0.1:${port}/`, {
          method: "POST",
          headers: { authorization: `Bearer ${workerSecret}` },
        }).catch(() => null);
        const body = await response?.json();
        return body?.status === "running" ? body : null;
      }, `the function on port ${port} to run its worker`);
    }

    await project.write(
      "producer.ts",
      `import { connect, startFlow, waitForRun } from "@sluice/sluice";
import { greetUser } from "./supabase/functions/_shared/flows.ts";

const sql = connect(Deno.env.get("DATABASE_URL")!);
const runId = await startFlow(sql, greetUser, { name: "Ada" });
console.log(runId);
console.log(JSON.stringify(await waitForRun(sql, runId, { flow: greetUser, timeoutMs: 30_000 })));
await sql.end();
`,
    );
    const [runId, output] = (await project.sh("deno run -A producer.ts")).trim().split("\n");
    assert.deepEqual(JSON.parse(output), { shout: "HELLO, ADA" });
    console.log(
      `newcomer path: install to a completed run in ${
        ((performance.now() - began) / 1000).toFixed(1)
      } s`,
    );
    // Serving with plain Deno left nothing in the functions' directories.
    for (const name of ["greet-user--hello", "greet-user--shout"]) {
      assert.deepEqual(
        [...Deno.readDirSync(join(project.dir, "supabase/functions", name))].map((e) => e.name)
          .sort(),
        ["deno.json", "index.ts"],
      );
    }
    const watched = await project.sh(`deno task sluice run ${runId}`);
    project.ran.add("deno task sluice run <run_id>");
    assert.match(watched, /completed/);

    // Aliases and a version's drain state, from the package like every other command: the flow's
    // self-alias, and a version whose work is done while its workers still serve.
    assert.match(
      await project.sh("deno task sluice aliases list"),
      /greet_user\s+greet_user\s+1\s+\S+\s+self/,
    );
    const drain = await project.sh("deno task sluice version-drain greet_user");
    assert.match(drain, /Work drained: no active run/);
    assert.match(drain, /its own name\s+still starts "greet_user"/);
    assert.match(drain, /live workers\s+2/);

    // The dashboard, loaded from the package like every other command: it shows the finished run
    // behind its secret and refuses a request without it.
    const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const dashboardPort = (probe.addr as Deno.NetAddr).port;
    probe.close();
    const secret = "user-project-dashboard-secret";
    const dashboard = await project.spawnSluice(
      ["dashboard", "--port", String(dashboardPort), "--secret", secret],
      "deno task sluice dashboard",
    );
    // Its pages live under the random base path of the address it prints.
    const lines = dashboard.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let printed = "";
    const dashboardRoot = await waitUntil(
      async () => {
        const { value, done } = await lines.read();
        printed += value ?? "";
        if (done) throw new Error(`The dashboard stopped before printing its address: ${printed}`);
        return /open (http:\/\/127\.0\.0\.1:\d+\/[0-9a-f]{32})\/\?token=/.exec(printed)?.[1];
      },
      "the dashboard's printed address",
      60_000,
    );
    const dashboardOutput = Promise.all([
      (async () => {
        for (let chunk = await lines.read(); !chunk.done; chunk = await lines.read()) {
          printed += chunk.value;
        }
        return printed;
      })(),
      new Response(dashboard.stderr).text(),
    ]);
    const runUrl = `${dashboardRoot}/runs/${runId}`;
    const runHtml = await waitUntil(
      async () => {
        const response = await fetch(runUrl, { headers: { authorization: `Bearer ${secret}` } });
        const text = await response.text();
        return response.status === 200 ? text : undefined;
      },
      "the dashboard's run page",
      60_000,
    );
    assert.match(runHtml, /greet_user/);
    // The run's own status cell, not the word (the shared stylesheet always has `.s-completed`).
    assert.match(runHtml, /id="run-status" data-status="completed"/);
    const refused = await fetch(runUrl);
    await refused.body?.cancel();
    assert.equal(refused.status, 401);
    dashboard.kill("SIGINT");
    assert.equal((await dashboard.status).code, 0, (await dashboardOutput).join("\n"));

    // Re-running install and migrate changes nothing.
    const before = await project.snapshot();
    assert.match(await project.sh(installLine), /nothing to do/);
    assert.match(await project.sh("deno task sluice migrate"), /migrations: up to date/);
    assert.deepEqual(await project.snapshot(), before);

    // Supabase's runner first, on another database: sluice's then finds its files applied.
    await using other = await supabaseLikeDatabase();
    const otherEnv = { DATABASE_URL: other.url };
    assert.match(
      await project.sh("supabase migration up", otherEnv),
      /Applying migration \d+_20261130001600_sluice_rollout\.sql/,
    );
    const recognized = await project.sh("deno task sluice migrate", otherEnv);
    assert.match(
      recognized,
      new RegExp(`${MIGRATION_FILES.length} already applied by Supabase's migration runner`),
    );
    assert.match(recognized, /migrations: up to date/);

    // Development: change the flow's shape and run it with `sluice dev`, which recompiles it
    // (development mode) now that the served functions, its old workers, have stopped.
    for (const child of children) child.kill("SIGTERM");
    await Promise.all(children.map((child) => child.status));
    children.length = 0;
    await project.write("supabase/functions/_shared/flows.ts", FLOWS_V2);
    const dev = await project.spawnSluice(["dev"], "deno task sluice dev");
    children.push(dev);
    const devErr = new Response(dev.stderr).text();
    // Drain dev's output all along: a full pipe would block its logging, and so its workers.
    const devLines: string[] = [];
    const running = Promise.withResolvers<void>();
    const devDone = (async () => {
      const devOut = lineReader(dev.stdout);
      for (let line = await devOut.next(); line !== null; line = await devOut.next()) {
        devLines.push(line);
        if (line.startsWith("sluice dev: ")) running.resolve();
      }
      running.reject(
        new Error(`sluice dev ended before running:\n${devLines.join("\n")}\n${await devErr}`),
      );
    })();
    await running.promise;
    const [, changed] = (await project.sh("deno run -A producer.ts")).trim().split("\n");
    assert.deepEqual(JSON.parse(changed), { exclaim: "HELLO, ADA!" });
    dev.kill("SIGTERM");
    await devDone;
    assert.equal((await dev.status).code, 0, `${devLines.join("\n")}\n${await devErr}`);
    children.length = 0;
    assert.ok(devLines.some((line) => line.startsWith("[greet-user--exclaim] info ")));
    assert.ok(devLines.some((line) => line.startsWith("[greet-user--hello] info ")));

    assert.match(await project.sh("deno task sluice flows reset greet_user"), /Deleted flow/);

    const documented = codeBlocks(
      await Deno.readTextFile(new URL("docs/getting_started.md", ROOT)),
      "sh",
    ).flatMap((block) => block.split("\n")).map((line) => line.trim())
      .filter((line) => line !== "" && !line.startsWith("#") && !line.startsWith("export "));
    for (const line of documented) {
      assert.ok(
        project.ran.has(line) || line in STAND_INS,
        `docs/getting_started.md runs \`${line}\`, which this test neither runs nor stands in for`,
      );
    }
  } finally {
    for (const child of children) {
      try {
        child.kill("SIGKILL");
      } catch {
        // Already exited.
      }
      await child.status;
    }
    await Deno.remove(project.dir, { recursive: true });
  }
});
