/**
 * How `deno task test` splits the suite (scripts/test.ts): which files run in every PGMQ mode and
 * which once, and which run in the serial phase after the parallel one.
 *
 * - **Once**: a file that reaches none of the server helpers of the test server (the embedded
 *   subset's rule, scripts/_embedded_subset.ts: pure unit tests, the embedded database, the
 *   testing kit, files that start servers of their own) tests nothing the PGMQ flavour changes, so
 *   it runs in the first mode only.
 * - **Serial**: a file that restarts a server, cuts connections or freezes a process
 *   ({@linkcode SERIAL_FILES}) runs after the parallel phase, one file at a time: its fault and
 *   its recovery are timed by the test, and a dozen parallel neighbours on two cores turn a 1 s
 *   recovery into a flake; its faults stay out of the neighbours' timing too.
 *   `tests/structure/test_phases_test.ts` fails when a file does one of those things
 *   ({@linkcode DISRUPTIONS}) and is not listed, or is listed and does none.
 *
 * @module
 */

import { embeddedSubset, NEEDS_A_SERVER, testFiles } from "./_embedded_subset.ts";

/** Test files of the serial phase, and the fault each causes. */
export const SERIAL_FILES: Record<string, string> = {
  "tests/client/watch_run_listener_test.ts": "cuts the listener's connections, SIGSTOPs a worker",
  "tests/client/watch_run_test.ts": "terminates sessions, SIGSTOPs a worker",
  "tests/db/connect_cut_test.ts": "cuts connections through a proxy",
  "tests/db/connect_tls_cut_test.ts": "cuts TLS connections through a proxy",
  "tests/db/outage_recovery_test.ts": "stops and restarts a private server",
  "tests/dev/temp_postgres_test.ts": "starts and stops clusters with pg_ctl",
  "tests/ops/run_watch_test.ts": "terminates the watch's sessions",
  "tests/worker/connect_pool_cuts_test.ts": "terminates a pool's sessions",
  "tests/worker/outage_test.ts": "terminates the worker's sessions",
  "tests/worker/recompile_fence_test.ts": "SIGSTOPs a worker process",
  "tests/worker/schedules_restart_test.ts": "restarts a private server",
  "tests/worker/startup_outage_test.ts": "starts workers while a private server is down",
  "tests/worker/waits_crash_test.ts": "restarts a private server",
};

/**
 * What makes a file disruptive, as found in its source: a private server it stops or restarts,
 * the cutting proxy, `pg_ctl`, terminated sessions, a frozen process.
 */
export const DISRUPTIONS: readonly RegExp[] = [
  /\bstartPrivateServer\(/,
  /\bcutAfterAnswerProxy\(|\boutageProxy\(/,
  /\bpg_ctl\b/,
  /\bpg_terminate_backend\b/,
  /\bSIGSTOP\b/,
];

/** The files of one mode's run, by phase. */
export interface TestPhases {
  /** Run with `deno test --parallel`. */
  readonly parallel: string[];
  /** Run one file at a time after the parallel phase. */
  readonly serial: string[];
  /** Left out of this mode: they ran in the first (server-independent). */
  readonly ranOnce: string[];
}

/**
 * The phases of one mode's run of `selected` (the files the paths on the command line name, or
 * every test file).
 *
 * @param root The repository root.
 * @param selected Test files, relative to `root`.
 * @param firstMode Whether this is the first mode of the run (server-independent files run in it).
 */
export async function testPhases(
  root: URL,
  selected: string[],
  firstMode: boolean,
): Promise<TestPhases> {
  const subset = await embeddedSubset(root);
  const once = new Set([...subset.files, ...Object.keys(NEEDS_A_SERVER)]);
  const parallel: string[] = [];
  const serial: string[] = [];
  const ranOnce: string[] = [];
  for (const file of selected) {
    if (!firstMode && once.has(file)) ranOnce.push(file);
    else if (file in SERIAL_FILES) serial.push(file);
    else parallel.push(file);
  }
  return { parallel, serial, ranOnce };
}

/**
 * The test files the paths among the arguments select (a file, or every test file under a
 * directory), or every test file under `tests/` when no path is given.
 */
export async function selectedTestFiles(root: URL, paths: string[]): Promise<string[]> {
  const all = await testFiles(root, "tests/");
  if (paths.length === 0) return all;
  const wanted = paths.map((path) => path.replace(/^\.\//, ""));
  const selected = new Set<string>();
  for (const path of wanted) {
    const info = await Deno.stat(new URL(path, root));
    if (info.isFile) selected.add(path);
    else {
      const dir = path.replace(/\/?$/, "/");
      for (const file of all) if (file.startsWith(dir)) selected.add(file);
    }
  }
  return [...selected].sort();
}
