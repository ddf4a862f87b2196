/**
 * The tests `deno task test` runs on a machine without PostgreSQL server binaries and without
 * `DATABASE_URL` (or with `SLUICE_TEST_EMBEDDED=1`): the embedded subset.
 *
 * The rule: a test file under `tests/` belongs to it when its graph of local imports (relative
 * specifiers, followed transitively) reaches none of the suite's server helpers
 * ({@linkcode SERVER_HELPERS}: the template databases of `tests/_db.ts`, the role and pool helpers
 * built on them, the throwaway cluster), and it is not in {@linkcode NEEDS_A_SERVER} (files that
 * reach a server another way, e.g. through a subprocess). That covers the embedded
 * end-to-end tests, the testing kit, `sluice dev` embedded and the pure unit tests. The demo's
 * embedded test is run on its own, by name ({@linkcode EMBEDDED_DEMO}): the other tests of its
 * file need a server.
 *
 * @module
 */

const EMBEDDED_DEMO_FILE = "tests/examples/demo_test.ts";

/** The demo's embedded test: its file, and the `--filter` that selects it. */
export const EMBEDDED_DEMO = { file: EMBEDDED_DEMO_FILE, filter: "SLUICE_EMBEDDED=1" };

/** Modules that need the server `deno task test` starts: a file importing one is left out. */
export const SERVER_HELPERS = ["tests/_db.ts", "tests/_support.ts", "tests/_run_events.ts"];

/** Test files that need a server without importing a helper, and why. */
export const NEEDS_A_SERVER: Record<string, string> = {
  "tests/dev/temp_postgres_test.ts": "starts throwaway PostgreSQL clusters",
  "tests/ops/schema_dump_test.ts": "runs scripts/schema_dump.ts, which starts a throwaway server",
  "tests/ops/sql_migration_test.ts":
    "runs scripts/sql_migration.ts, which starts a throwaway server",
  [EMBEDDED_DEMO_FILE]: "its other tests start a server (its embedded test runs on its own)",
};

/** The subset and what it leaves out (with the reason), paths relative to `root`. */
export interface EmbeddedSubset {
  /** Test files that run. */
  readonly files: string[];
  /** Test files left out, each with the server helper it reaches or the reason it needs one. */
  readonly leftOut: { file: string; reason: string }[];
}

const IMPORT =
  /(?:import|export)\s[^"';]*?from\s*["'](\.{1,2}\/[^"']+)["']|import\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g;

/**
 * Selects the embedded subset of `root`'s `tests/` directory.
 *
 * @param root The repository root.
 * @returns The files that run and those left out.
 */
export async function embeddedSubset(root: URL): Promise<EmbeddedSubset> {
  const files: string[] = [];
  const leftOut: { file: string; reason: string }[] = [];
  const reach = new Map<string, string | null>();
  for (const file of await testFiles(root, "tests/")) {
    const reason = NEEDS_A_SERVER[file] ?? await serverHelperReached(root, file, reach, new Set());
    if (reason === null) files.push(file);
    else leftOut.push({ file, reason: NEEDS_A_SERVER[file] ?? `imports ${reason}` });
  }
  return { files, leftOut };
}

/** The first server helper `file`'s local imports reach, or `null`. */
async function serverHelperReached(
  root: URL,
  file: string,
  reach: Map<string, string | null>,
  visiting: Set<string>,
): Promise<string | null> {
  if (SERVER_HELPERS.includes(file)) return file;
  const known = reach.get(file);
  if (known !== undefined) return known;
  if (visiting.has(file)) return null;
  visiting.add(file);
  let text: string;
  try {
    text = await Deno.readTextFile(new URL(file, root));
  } catch {
    return null;
  }
  let found: string | null = null;
  for (const match of text.matchAll(IMPORT)) {
    const target = new URL(match[1] ?? match[2], new URL(file, root)).href.slice(root.href.length);
    found = await serverHelperReached(root, target, reach, visiting);
    if (found !== null) break;
  }
  reach.set(file, found);
  return found;
}

/** The test files (`*_test.ts`) under `dir` of `root`, sorted, paths relative to `root`. */
export async function testFiles(root: URL, dir: string): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(new URL(dir, root))) {
    const path = `${dir}${entry.name}`;
    if (entry.isDirectory) found.push(...await testFiles(root, `${path}/`));
    else if (entry.isFile && /_test\.ts$/.test(entry.name)) found.push(path);
  }
  return found.sort();
}
