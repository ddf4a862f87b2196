/**
 * `deno task test [deno test args]`: runs the suite against real PostgreSQL.
 *
 * Uses the server at `DATABASE_URL` (as superuser URL) when set, otherwise a throwaway cluster.
 * Builds the template database `sluice_template` with every migration, then runs `deno check` on
 * `tests/types/` and `deno test -A --parallel` with `SLUICE_TEST_ADMIN_URL`,
 * `SLUICE_TEST_TEMPLATE` and `SLUICE_TEST_PGMQ_INSTALLED` set, and prints
 * `N passed, N failed[, N skipped]` last (docs/internals/contracts.md §4). Arguments are passed on
 * to `deno test`; without a path among them the whole `tests/` directory runs.
 *
 * `SLUICE_TEST_PGMQ=extension` runs the suite on a throwaway cluster of a private server copy in
 * which `create extension pgmq` works (scripts/_pgmq_extension.ts); `both` runs the default mode,
 * then that one, and the last line sums the two.
 *
 * @module
 */
import postgres from "postgres";
import { migrate } from "../src/ops/migrate.ts";
import { startTempPostgres, type TempPostgres } from "../dev/temp_postgres.ts";
import { databaseUrl } from "../tests/_db.ts";
import { buildPgmqExtensionServer, type PgmqExtensionServer } from "./_pgmq_extension.ts";
import {
  addTestSummary,
  formatTestSummary,
  parseTestSummary,
  type TestSummary,
} from "./_test_summary.ts";

const TEMPLATE = "sluice_template";
/** Which PGMQ the suite runs on: `compat` (default), `extension` or `both`, one after the other. */
const MODE_VARIABLE = "SLUICE_TEST_PGMQ";
/** Tells the tests which PGMQ the template holds (tests/_db.ts `installedPgmq()`). */
const INSTALLED_VARIABLE = "SLUICE_TEST_PGMQ_INSTALLED";

/**
 * `compat`: the system's PostgreSQL as it is (or the server at `DATABASE_URL`); plain PostgreSQL
 * lacks the extension, so migrate installs the compat layer. `extension`: a private server copy
 * whose `create extension pgmq` installs the compat layer packaged as extension pgmq 1.5.1.
 */
type PgmqMode = "compat" | "extension";
type PgmqInstalled = "compat" | "extension";
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
  const total: TestSummary = { passed: 0, failed: 0, ignored: 0 };
  try {
    const modes = pgmqModes(Deno.env.get(MODE_VARIABLE));
    const databaseUrl = Deno.env.get("DATABASE_URL") ?? "";
    if (databaseUrl !== "" && modes.includes("extension")) {
      throw new Error(
        `Cannot run ${MODE_VARIABLE}=extension against DATABASE_URL: that mode starts its own ` +
          "server copy with the packaged extension; unset DATABASE_URL",
      );
    }
    for (const [index, mode] of modes.entries()) {
      const started = performance.now();
      const summary = await runMode(mode, databaseUrl, args, index === 0);
      if (interrupted !== undefined) return interrupted;
      const seconds = Math.round((performance.now() - started) / 1000);
      if (modes.length > 1) log(`${mode}: ${formatTestSummary(summary)} (${seconds} s)`);
      addTestSummary(total, summary);
    }
  } catch (error) {
    if (interrupted !== undefined) return interrupted;
    console.error(error instanceof Error ? error.message : error);
    total.failed += 1;
  }
  if (total.passed + total.failed === 0) log("no tests ran");
  console.log(formatTestSummary(total));
  return total.failed === 0 && total.passed > 0 ? 0 : 1;
}

/** The modes `SLUICE_TEST_PGMQ` asks for, in the order they run. */
function pgmqModes(value: string | undefined): PgmqMode[] {
  if (value === undefined || value === "" || value === "compat") return ["compat"];
  if (value === "extension") return ["extension"];
  if (value === "both") return ["compat", "extension"];
  throw new Error(
    `Cannot run the tests: ${MODE_VARIABLE} must be compat, extension or both, got "${value}"`,
  );
}

/**
 * One run of the suite: a server (the one at `databaseUrl`, else a throwaway cluster of the
 * system's PostgreSQL, or of the private copy with the packaged pgmq extension), the template, the
 * type tests when `checkTypesToo`, and `deno test`. Failures of the setup count as one failed test.
 */
async function runMode(
  mode: PgmqMode,
  databaseUrl: string,
  args: string[],
  checkTypesToo: boolean,
): Promise<TestSummary> {
  let adminUrl = databaseUrl;
  let copy: PgmqExtensionServer | undefined;
  let cluster: TempPostgres | undefined;
  let cleaned: Promise<void> | undefined;
  cleanup = () =>
    cleaned ??= (async () => {
      // On a shared server, leave nothing behind; a throwaway cluster goes away as a whole.
      if (cluster === undefined && adminUrl !== "") await dropTemplate(adminUrl).catch(() => {});
      await cluster?.stop();
      await copy?.remove();
    })();
  try {
    if (mode === "extension") {
      copy = await buildPgmqExtensionServer();
      log(`built a PostgreSQL copy with the packaged pgmq extension (${copy.shareDir})`);
    }
    if (adminUrl === "") {
      cluster = await startTempPostgres(copy === undefined ? {} : { path: copy.binDir });
      adminUrl = cluster.url;
      log(`started throwaway PostgreSQL on port ${cluster.port} (${cluster.dataDir})`);
    } else {
      log("using the server at DATABASE_URL");
    }
    if (copy !== undefined) await checkShareDir(adminUrl, copy.shareDir);
    const installed = await buildTemplate(adminUrl);
    if (mode === "extension" && installed !== "extension") {
      throw new Error(`Cannot test the extension mode: the template got PGMQ ${installed}`);
    }
    const env = {
      SLUICE_TEST_ADMIN_URL: adminUrl,
      SLUICE_TEST_TEMPLATE: TEMPLATE,
      [INSTALLED_VARIABLE]: installed,
    };
    let typeFailures = 0;
    if (checkTypesToo && await shouldCheckTypes(args)) typeFailures = await checkTypes(env);
    const result = await denoTest(args, env);
    const summary: TestSummary = result.summary ?? { passed: 0, failed: 0, ignored: 0 };
    if (interrupted !== undefined) return summary;
    if (result.summary === undefined) {
      log("deno test printed no summary (see its output above)");
      summary.failed += 1;
    } else if (result.code !== 0 && summary.failed === 0) {
      log(`deno test exited with code ${result.code} although no test failed`);
      summary.failed += 1;
    }
    summary.failed += typeFailures;
    return summary;
  } catch (error) {
    if (interrupted !== undefined) return { passed: 0, failed: 0, ignored: 0 };
    console.error(error instanceof Error ? error.message : error);
    return { passed: 0, failed: 1, ignored: 0 };
  } finally {
    await cleanup();
  }
}

/** The server must read extensions from the copy's share directory, not the system's. */
async function checkShareDir(adminUrl: string, expected: string): Promise<void> {
  const [row] = await withClient(
    adminUrl,
    (sql) => sql<{ setting: string }[]>`select setting from pg_config where name = 'SHAREDIR'`,
  );
  if (row?.setting !== expected) {
    throw new Error(
      `Cannot test the extension mode: the server uses share directory ${row?.setting}, ` +
        `not the copy's ${expected}`,
    );
  }
}

/** Builds the template and returns which PGMQ it holds: the extension or the compat layer. */
async function buildTemplate(adminUrl: string): Promise<PgmqInstalled> {
  const started = performance.now();
  await dropTemplate(adminUrl);
  await withClient(adminUrl, (sql) => sql.unsafe(`create database ${TEMPLATE}`));
  const { pgmq, applied, installed } = await withClient(
    databaseUrl(adminUrl, TEMPLATE),
    async (sql) => {
      const result = await migrate(sql);
      const [row] = await sql<{ extension: boolean }[]>`
        select exists (select 1 from pg_extension where extname = 'pgmq') as extension
      `;
      return { ...result, installed: row.extension ? "extension" as const : "compat" as const };
    },
  );
  // No connections allowed: CREATE DATABASE ... TEMPLATE fails while anyone is connected to it.
  await withClient(
    adminUrl,
    (sql) => sql.unsafe(`alter database ${TEMPLATE} with is_template true allow_connections false`),
  );
  const ms = Math.round(performance.now() - started);
  log(`built ${TEMPLATE}: pgmq ${pgmq} (${installed}), ${applied.length} migrations (${ms} ms)`);
  return installed;
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
