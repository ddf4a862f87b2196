/**
 * `deno task test [deno test args]`: runs the suite against real PostgreSQL.
 *
 * Uses the server at `DATABASE_URL` (as superuser URL) when set, otherwise a throwaway cluster.
 * Builds the template database `sluice_template` with every migration, then runs `deno check` on
 * `tests/types/` and `deno test -A --parallel` with `SLUICE_TEST_ADMIN_URL` and
 * `SLUICE_TEST_TEMPLATE` set, and prints `N passed, N failed[, N skipped]` last
 * (docs/internals/contracts.md §4). Arguments are passed on to `deno test`; without a path among
 * them the whole `tests/` directory runs.
 *
 * @module
 */
import postgres from "postgres";
import { migrate } from "../src/ops/migrate.ts";
import { startTempPostgres, type TempPostgres } from "../dev/temp_postgres.ts";
import { databaseUrl } from "../tests/_db.ts";
import { formatTestSummary, parseTestSummary, type TestSummary } from "./_test_summary.ts";

const TEMPLATE = "sluice_template";
const ROOT = new URL("../", import.meta.url);

function log(message: string): void {
  console.error(`test: ${message}`);
}

/** Stops whatever the run set up; runs once, from `finally` or a signal handler. */
let cleanup: () => Promise<void> = () => Promise.resolve();
let child: Deno.ChildProcess | undefined;
/** Exit code once a signal arrived: the run is abandoned, no summary is printed. */
let interrupted: number | undefined;

function onSignal(signal: "SIGINT" | "SIGTERM", code: number) {
  Deno.addSignalListener(signal, async () => {
    if (interrupted !== undefined) return;
    interrupted = code;
    log(`${signal} received: stopping`);
    // Ctrl-C reaches `deno test` through the process group, a plain SIGTERM to us does not.
    try {
      child?.kill("SIGTERM");
    } catch {
      // Already exited.
    }
    await cleanup();
    Deno.exit(code);
  });
}

async function main(args: string[]): Promise<number> {
  onSignal("SIGINT", 130);
  onSignal("SIGTERM", 143);
  let adminUrl = Deno.env.get("DATABASE_URL") ?? "";
  let cluster: TempPostgres | undefined;
  if (adminUrl === "") {
    cluster = await startTempPostgres();
    adminUrl = cluster.url;
    log(`started throwaway PostgreSQL on port ${cluster.port} (${cluster.dataDir})`);
  } else {
    log("using the server at DATABASE_URL");
  }
  let cleaned: Promise<void> | undefined;
  cleanup = () =>
    cleaned ??= (async () => {
      // On a shared server, leave nothing behind; a throwaway cluster goes away as a whole.
      if (cluster === undefined) await dropTemplate(adminUrl).catch(() => {});
      await cluster?.stop();
    })();
  try {
    await buildTemplate(adminUrl);
    const env = { SLUICE_TEST_ADMIN_URL: adminUrl, SLUICE_TEST_TEMPLATE: TEMPLATE };
    let typeFailures = 0;
    if (await shouldCheckTypes(args)) typeFailures = await checkTypes(env);
    const result = await denoTest(args, env);
    if (interrupted !== undefined) return interrupted;
    const summary: TestSummary = result.summary ?? { passed: 0, failed: 0, ignored: 0 };
    if (result.summary === undefined) {
      log("deno test printed no summary (see its output above)");
      summary.failed += 1;
    } else if (result.code !== 0 && summary.failed === 0) {
      log(`deno test exited with code ${result.code} although no test failed`);
      summary.failed += 1;
    }
    summary.failed += typeFailures;
    if (summary.passed + summary.failed === 0) log("no tests ran");
    console.log(formatTestSummary(summary));
    return summary.failed === 0 && summary.passed > 0 ? 0 : 1;
  } catch (error) {
    if (interrupted !== undefined) return interrupted;
    console.error(error instanceof Error ? error.message : error);
    console.log(formatTestSummary({ passed: 0, failed: 1, ignored: 0 }));
    return 1;
  } finally {
    await cleanup();
  }
}

async function buildTemplate(adminUrl: string): Promise<void> {
  const started = performance.now();
  await dropTemplate(adminUrl);
  await withClient(adminUrl, (sql) => sql.unsafe(`create database ${TEMPLATE}`));
  const { pgmq, applied } = await withClient(
    databaseUrl(adminUrl, TEMPLATE),
    (sql) => migrate(sql),
  );
  // No connections allowed: CREATE DATABASE ... TEMPLATE fails while anyone is connected to it.
  await withClient(
    adminUrl,
    (sql) => sql.unsafe(`alter database ${TEMPLATE} with is_template true allow_connections false`),
  );
  const ms = Math.round(performance.now() - started);
  log(`built ${TEMPLATE}: pgmq ${pgmq}, ${applied.length} migrations (${ms} ms)`);
}

async function dropTemplate(adminUrl: string): Promise<void> {
  await withClient(adminUrl, async (sql) => {
    const [exists] = await sql`select 1 from pg_database where datname = ${TEMPLATE}`;
    if (exists === undefined) return;
    // A template database cannot be dropped; a run that died left it marked as one.
    await sql.unsafe(`alter database ${TEMPLATE} with is_template false`);
    await sql.unsafe(`drop database ${TEMPLATE} with (force)`);
  });
}

async function withClient<T>(url: string, fn: (sql: postgres.Sql) => Promise<T>): Promise<T> {
  const sql = postgres(url, { prepare: false, max: 1, onnotice: () => {} });
  try {
    return await fn(sql);
  } finally {
    await sql.end();
  }
}

/** Paths among the arguments; option values such as `--filter foo` are not paths on disk. */
async function pathArgs(args: string[]): Promise<string[]> {
  const paths: string[] = [];
  for (const arg of args) {
    if (arg.startsWith("-")) continue;
    if (await Deno.stat(new URL(arg, ROOT)).then(() => true, () => false)) paths.push(arg);
  }
  return paths;
}

async function typeFiles(): Promise<string[]> {
  const files: string[] = [];
  try {
    for await (const entry of Deno.readDir(new URL("tests/types/", ROOT))) {
      if (entry.isFile && entry.name.endsWith(".ts")) files.push(`tests/types/${entry.name}`);
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  return files.sort();
}

/** Type tests run with the whole suite, or when the given paths include them. */
async function shouldCheckTypes(args: string[]): Promise<boolean> {
  const paths = await pathArgs(args);
  const normalized = paths.map((path) => path.replace(/^\.\//, "").replace(/\/?$/, "/"));
  return paths.length === 0 ||
    normalized.some((path) => "tests/types/".startsWith(path) || path.startsWith("tests/types/"));
}

async function checkTypes(env: Record<string, string>): Promise<number> {
  const files = await typeFiles();
  if (files.length === 0) return 0;
  log(`deno check ${files.join(" ")}`);
  const { code } = await new Deno.Command(Deno.execPath(), {
    args: ["check", ...files],
    cwd: ROOT,
    env,
    stdin: "null",
  }).output();
  if (code !== 0) log("type tests failed (counted as 1 failed)");
  return code === 0 ? 0 : 1;
}

async function denoTest(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; summary: TestSummary | undefined }> {
  const paths = await pathArgs(args);
  const testArgs = ["test", "-A"];
  if (!args.includes("--parallel")) testArgs.push("--parallel");
  testArgs.push(...args);
  if (paths.length === 0) testArgs.push("tests/");
  log(`deno ${testArgs.join(" ")}`);
  child = new Deno.Command(Deno.execPath(), {
    args: testArgs,
    cwd: ROOT,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // Tee: the output stays visible while the summary is parsed from a copy.
  const [stdout] = await Promise.all([
    tee(child.stdout, Deno.stdout),
    tee(child.stderr, Deno.stderr),
  ]);
  const { code } = await child.status;
  child = undefined;
  return { code, summary: parseTestSummary(stdout) };
}

async function tee(
  from: ReadableStream<Uint8Array>,
  to: { write(chunk: Uint8Array): Promise<number> },
): Promise<string> {
  const decoder = new TextDecoder();
  let text = "";
  for await (const chunk of from) {
    let written = 0;
    while (written < chunk.length) written += await to.write(chunk.subarray(written));
    text += decoder.decode(chunk, { stream: true });
  }
  return text + decoder.decode();
}

Deno.exit(await main(Deno.args));
