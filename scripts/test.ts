/**
 * `deno task test [deno test args]`: runs the suite against real PostgreSQL.
 *
 * Uses the server at `DATABASE_URL` (as superuser URL) when set, otherwise a throwaway cluster.
 * Builds the template database `sluice_template` with every migration, then runs `deno check` on
 * `tests/types/` and `deno test -A` with `SLUICE_TEST_ADMIN_URL`,
 * `SLUICE_TEST_TEMPLATE`, `SLUICE_TEST_PGMQ_INSTALLED` and `SLUICE_TEST_PGMQ_FLAVOUR` set, and
 * prints `N passed, N failed[, N skipped]` last (docs/internals/contracts.md §4). Arguments are
 * passed on to `deno test`; without a path among them the whole `tests/` directory runs. Each
 * mode runs its files in two phases (scripts/_test_phases.ts): the parallel one, then the files
 * that restart servers, cut connections or freeze processes, one at a time; files that need no
 * test server run in the first mode only. The 10 slowest files are printed at the end.
 *
 * `SLUICE_TEST_PGMQ` picks which PGMQ the suite runs on:
 *
 * - `compat` (default): the system's PostgreSQL (or the server at `DATABASE_URL`), which lacks the
 *   extension, so migrate installs sluice's compat layer;
 * - `extension`: the real PGMQ extension, whose files (`pgmq.control`, `pgmq--<version>.sql`) are
 *   in the directory `SLUICE_PGMQ_EXTENSION_DIR` names, installed into a private server copy
 *   (scripts/_pgmq_extension.ts). Without that variable it says so and runs `packaged` instead;
 * - `packaged`: the same server copy with sluice's compat layer packaged as extension pgmq 1.5.1
 *   (the installer's and the first migration's extension branches, on sluice's own SQL);
 * - `both`: `compat`, then `extension`.
 *
 * Each mode's own count goes to stderr as `test: <mode> mode: N passed, ...`; the last line on
 * stdout sums the modes.
 *
 * Without PostgreSQL server binaries and without `DATABASE_URL` (a fresh machine with only Deno),
 * or with `SLUICE_TEST_EMBEDDED=1`, it runs the embedded subset instead (scripts/_embedded_subset.ts
 * names the rule) on the embedded database, says so and lists what it left out and why; the last
 * line keeps its format. Paths among the arguments narrow the subset.
 *
 * @module
 */
import postgres from "postgres";
import { migrate } from "../src/migrations/migrate.ts";
import {
  findPostgresBinaries,
  PostgresNotFoundError,
  startTempPostgres,
  type TempPostgres,
} from "../dev/temp_postgres.ts";
import { EMBEDDED_DEMO, embeddedSubset } from "./_embedded_subset.ts";
import { databaseUrl } from "../tests/_db.ts";
import { buildPgmqExtensionServer, type PgmqExtensionServer } from "./_pgmq_extension.ts";
import { selectedTestFiles, testPhases } from "./_test_phases.ts";
import {
  addFileDurations,
  addTestSummary,
  failureReport,
  formatTestSummary,
  parseTestSummary,
  slowestFiles,
  type TestSummary,
} from "./_test_summary.ts";

const TEMPLATE = "sluice_template";
/** Which PGMQ the suite runs on: `compat` (default), `extension`, `packaged` or `both`. */
const MODE_VARIABLE = "SLUICE_TEST_PGMQ";
/** The directory holding the real extension's files, for the `extension` mode. */
const EXTENSION_DIR_VARIABLE = "SLUICE_PGMQ_EXTENSION_DIR";
/** Tells the tests whether the template holds an extension (tests/_db.ts `installedPgmq()`). */
const INSTALLED_VARIABLE = "SLUICE_TEST_PGMQ_INSTALLED";
/** Tells the tests which PGMQ implementation runs (tests/_db.ts `pgmqFlavour()`). */
const FLAVOUR_VARIABLE = "SLUICE_TEST_PGMQ_FLAVOUR";

/** The modes of `SLUICE_TEST_PGMQ` (module comment); `both` is `compat` then `extension`. */
type PgmqMode = "compat" | "extension" | "packaged";
type PgmqInstalled = "compat" | "extension";
/** The PGMQ implementation a run tests: sluice's compat layer (plain or packaged), or the real. */
type PgmqFlavour = "compat" | "packaged" | "real";
const ROOT = new URL("../", import.meta.url);

function log(message: string): void {
  console.error(`test: ${message}`);
}

/** Stops whatever the run set up; runs once, from `finally` or a signal handler. */
let cleanup: () => Promise<void> = () => Promise.resolve();
let child: Deno.ChildProcess | undefined;
/** Exit code once a signal arrived: the run is abandoned, no summary is printed. */
let interrupted: number | undefined;
/** Each test file's time over every `deno test` run, for the slowest files printed at the end. */
const fileTimes = new Map<string, number>();
/** Each failing `deno test` run's ERRORS section, by label, repeated before the last line. */
const failureRecaps: { label: string; report: string }[] = [];

/** Repeats what failed where the tail of a long log shows it: after the last mode. */
function printFailureRecaps(): void {
  if (fileTimes.size > 0) {
    log("the 10 slowest test files (the sum of their tests' durations, over every mode):");
    for (const line of slowestFiles(fileTimes)) console.error(line);
  }
  for (const { label, report } of failureRecaps) {
    log(`what failed in the ${label}:`);
    console.error(report);
  }
}

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
    const embeddedReason = await embeddedOnly(databaseUrl);
    if (embeddedReason !== null) {
      const summary = await runEmbeddedSubset(args, embeddedReason);
      if (interrupted !== undefined) return interrupted;
      log(`embedded subset: ${formatTestSummary(summary)}`);
      addTestSummary(total, summary);
      printFailureRecaps();
      console.log(formatTestSummary(total));
      return total.failed === 0 && total.passed > 0 ? 0 : 1;
    }
    const copied = modes.find((mode) => mode !== "compat");
    if (databaseUrl !== "" && copied !== undefined) {
      throw new Error(
        `Cannot run ${MODE_VARIABLE}=${copied} against DATABASE_URL: that mode starts its own ` +
          "server copy with the pgmq extension; unset DATABASE_URL",
      );
    }
    const extensionDir = Deno.env.get(EXTENSION_DIR_VARIABLE) ?? "";
    for (const [index, asked] of modes.entries()) {
      const mode = asked === "extension" && extensionDir === "" ? "packaged" : asked;
      if (mode !== asked) {
        log(
          `${EXTENSION_DIR_VARIABLE} is not set, so the extension mode cannot install the real ` +
            "PGMQ: it runs the packaged mode instead, which tests sluice's compat layer packaged " +
            "as extension pgmq 1.5.1 (not the real PGMQ)",
        );
      }
      const started = performance.now();
      const summary = await runMode(mode, extensionDir, databaseUrl, args, index === 0);
      if (interrupted !== undefined) return interrupted;
      const seconds = Math.round((performance.now() - started) / 1000);
      // Named and on stderr: only the summed line below may read like a closing line.
      log(`${mode} mode: ${formatTestSummary(summary)} (${seconds} s)`);
      addTestSummary(total, summary);
    }
  } catch (error) {
    if (interrupted !== undefined) return interrupted;
    console.error(error instanceof Error ? error.message : error);
    total.failed += 1;
  }
  if (total.passed + total.failed === 0) log("no tests ran");
  printFailureRecaps();
  console.log(formatTestSummary(total));
  return total.failed === 0 && total.passed > 0 ? 0 : 1;
}

/** Forces the embedded subset where a server could run the full suite. */
const EMBEDDED_VARIABLE = "SLUICE_TEST_EMBEDDED";

/** Why only the embedded subset can run, or `null` when a server is at hand. */
async function embeddedOnly(databaseUrl: string): Promise<string | null> {
  if (["1", "true"].includes(Deno.env.get(EMBEDDED_VARIABLE) ?? "")) {
    return `${EMBEDDED_VARIABLE} is set`;
  }
  if (databaseUrl !== "") return null;
  try {
    await findPostgresBinaries();
    return null;
  } catch (error) {
    if (!(error instanceof PostgresNotFoundError)) throw error;
    return "no DATABASE_URL and no PostgreSQL server binaries (initdb, pg_ctl on PATH or in " +
      "/usr/lib/postgresql/*/bin)";
  }
}

/**
 * The embedded subset on the embedded database: the selected files in one `deno test`, the demo's
 * embedded test in another, the type tests. Paths among `args` narrow the selection.
 */
async function runEmbeddedSubset(args: string[], reason: string): Promise<TestSummary> {
  const subset = await embeddedSubset(ROOT);
  const paths = (await pathArgs(args)).map((path) => path.replace(/^\.\//, ""));
  const wanted = (file: string) =>
    paths.length === 0 ||
    paths.some((path) => file === path || file.startsWith(path.replace(/\/?$/, "/")));
  const files = subset.files.filter(wanted);
  const demo = wanted(EMBEDDED_DEMO.file);
  const leftOut = subset.leftOut.filter(({ file }) => wanted(file));
  log(
    `${reason}: running the EMBEDDED SUBSET on the embedded database (PGlite) instead of the full ` +
      `suite: ${files.length} test files${demo ? " and the demo's embedded test" : ""}`,
  );
  log(
    `left out ${leftOut.length} test files that need a PostgreSQL server (they import ` +
      "tests/_db.ts, tests/_support.ts or tests/_run_events.ts, or start one themselves):",
  );
  for (const { file, reason } of leftOut) log(`  ${file}: ${reason}`);
  log(
    "for the full suite, install server binaries (bash scripts/setup.sh) or set DATABASE_URL " +
      "to a PostgreSQL superuser URL",
  );
  const env = { SLUICE_EMBEDDED: "1", DATABASE_URL: "" };
  const options = args.filter((arg) => arg.startsWith("-") && arg !== "--parallel");
  const total: TestSummary = { passed: 0, failed: 0, ignored: 0 };
  if (await shouldCheckTypes(args)) total.failed += await checkTypes(env);
  const runs: { options: string[]; files: string[] }[] = [];
  if (files.length > 0) runs.push({ options, files });
  if (demo) {
    runs.push({ options: ["--filter", EMBEDDED_DEMO.filter], files: [EMBEDDED_DEMO.file] });
  }
  for (const run of runs) {
    const result = await denoTest(run.options, run.files, true, env, "embedded subset");
    if (interrupted !== undefined) return total;
    if (result.summary === undefined) {
      log("deno test printed no summary (see its output above)");
      total.failed += 1;
      continue;
    }
    if (result.code !== 0 && result.summary.failed === 0) total.failed += 1;
    addTestSummary(total, result.summary);
  }
  // A filtered-out test is not a skipped one: the demo's other tests are listed as left out.
  return total;
}

/** The modes `SLUICE_TEST_PGMQ` asks for, in the order they run. */
function pgmqModes(value: string | undefined): PgmqMode[] {
  if (value === undefined || value === "" || value === "compat") return ["compat"];
  if (value === "extension" || value === "packaged") return [value];
  if (value === "both") return ["compat", "extension"];
  throw new Error(
    `Cannot run the tests: ${MODE_VARIABLE} must be compat, extension, packaged or both, ` +
      `got "${value}"`,
  );
}

/**
 * One run of the suite: a server (the one at `databaseUrl`, else a throwaway cluster of the
 * system's PostgreSQL, or of the private copy with the real or the packaged pgmq extension), the
 * template, the type tests in the first mode, and `deno test`: the parallel phase, then the serial
 * one (scripts/_test_phases.ts; server-independent files only in the first mode). Failures of the
 * setup count as one failed test.
 */
async function runMode(
  mode: PgmqMode,
  extensionDir: string,
  databaseUrl: string,
  args: string[],
  firstMode: boolean,
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
    if (mode !== "compat") {
      copy = await buildPgmqExtensionServer(
        mode === "extension" ? { kind: "real", dir: extensionDir } : { kind: "packaged" },
      );
      log(`${mode} mode: built a PostgreSQL copy offering ${copy.description} (${copy.shareDir})`);
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
    if (mode !== "compat" && installed !== "extension") {
      throw new Error(`Cannot test the ${mode} mode: the template got PGMQ ${installed}`);
    }
    const flavour: PgmqFlavour = mode === "extension"
      ? "real"
      : mode === "packaged"
      ? "packaged"
      : installed === "extension"
      ? "real" // a DATABASE_URL server that has the extension (e.g. Supabase's)
      : "compat";
    const env = {
      SLUICE_TEST_ADMIN_URL: adminUrl,
      SLUICE_TEST_TEMPLATE: TEMPLATE,
      [INSTALLED_VARIABLE]: installed,
      [FLAVOUR_VARIABLE]: flavour,
    };
    let typeFailures = 0;
    if (firstMode && await shouldCheckTypes(args)) typeFailures = await checkTypes(env);
    const summary: TestSummary = { passed: 0, failed: typeFailures, ignored: 0 };
    const paths = await pathArgs(args);
    const options = args.filter((arg) => !paths.includes(arg) && arg !== "--parallel");
    const phases = await testPhases(ROOT, await selectedTestFiles(ROOT, paths), firstMode);
    if (phases.ranOnce.length > 0) {
      log(
        `${mode} mode: leaves out ${phases.ranOnce.length} server-independent files, which ran ` +
          "in the first mode",
      );
    }
    const runs = [
      { files: phases.parallel, parallel: true, label: `${mode} mode` },
      { files: phases.serial, parallel: false, label: `${mode} mode, serial phase` },
    ];
    for (const run of runs) {
      if (run.files.length === 0) continue;
      if (!run.parallel) {
        log(`${mode} mode: serial phase, one file at a time (servers restarted, connections cut)`);
      }
      const result = await denoTest(options, run.files, run.parallel, env, run.label);
      if (interrupted !== undefined) return summary;
      if (result.summary === undefined) {
        log("deno test printed no summary (see its output above)");
        summary.failed += 1;
        continue;
      }
      if (result.code !== 0 && result.summary.failed === 0) {
        log(`deno test exited with code ${result.code} although no test failed`);
        summary.failed += 1;
      }
      addTestSummary(summary, result.summary);
    }
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

/** `deno test` of `files` with `options`; the serial phase runs one file at a time. */
async function denoTest(
  options: string[],
  files: string[],
  parallel: boolean,
  env: Record<string, string>,
  label: string,
): Promise<{ code: number; summary: TestSummary | undefined }> {
  const testArgs = ["test", "-A", ...(parallel ? ["--parallel"] : []), ...options, ...files];
  log(`deno ${[...testArgs.slice(0, -files.length), `<${files.length} files>`].join(" ")}`);
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
  const report = failureReport(stdout);
  if (report !== "") failureRecaps.push({ label, report });
  addFileDurations(fileTimes, stdout);
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
