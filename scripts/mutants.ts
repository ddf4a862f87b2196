/**
 * `deno task test:mutants [--only id,id] [--mode compat|extension|both]`: the mutation audit
 * (docs/testing.md). For each mutant of tests/mutants/mutants.ts it applies the one-line change
 * to a scratch copy of the checkout (the files `git ls-files` lists, tracked and untracked, as
 * they are in the working tree) and runs `deno task test <its guards>` there, in each PGMQ mode:
 * `compat`, and `extension` when `SLUICE_PGMQ_EXTENSION_DIR` names the real extension's files
 * (otherwise it says so and runs compat only). First it runs every guard once without a mutant,
 * so a guard that already fails cannot pass for a kill.
 *
 * Prints a table (mutant, mode, killed/survived/error, seconds) and exits non-zero when a mutant
 * survived, a run gave no test result, or a mutant could not be applied (its search text is not
 * found exactly once: the list is stale). The logs of such runs are kept and named.
 *
 * @module
 */

import { MUTANTS } from "../tests/mutants/mutants.ts";
import {
  applyMutant,
  formatMutantTable,
  MutantArgsError,
  type MutantMode,
  type MutantOutcome,
  parseMutantArgs,
} from "./_mutants.ts";
import { copyCheckout } from "./_checkout_copy.ts";
import { parseTestSummary } from "./_test_summary.ts";

const ROOT = new URL("../", import.meta.url);
const EXTENSION_DIR_VARIABLE = "SLUICE_PGMQ_EXTENSION_DIR";

function log(message: string): void {
  console.error(`mutants: ${message}`);
}

/** The scratch copy, the kept logs, and the running `deno task test`, for cleanup. */
let scratch: string | undefined;
let child: Deno.ChildProcess | undefined;

async function removeScratch(): Promise<void> {
  if (scratch === undefined) return;
  await Deno.remove(scratch, { recursive: true }).catch(() => {});
  scratch = undefined;
}

function onSignal(signal: "SIGINT" | "SIGTERM", code: number): void {
  Deno.addSignalListener(signal, async () => {
    log(`${signal} received: stopping`);
    try {
      // scripts/test.ts stops its `deno test` and its cluster on SIGTERM.
      child?.kill("SIGTERM");
      await child?.status;
    } catch {
      // Already exited.
    }
    await removeScratch();
    Deno.exit(code);
  });
}

/** Runs `deno task test <files>` in the scratch copy; the output goes to `logFile`. */
async function runGuards(
  dir: string,
  files: readonly string[],
  mode: MutantMode,
  logFile: string,
): Promise<{ result: MutantOutcome["result"]; seconds: number }> {
  const started = performance.now();
  const command = new Deno.Command(Deno.execPath(), {
    args: ["task", "test", ...files],
    cwd: dir,
    env: { SLUICE_TEST_PGMQ: mode },
    stdout: "piped",
    stderr: "piped",
  });
  child = command.spawn();
  const output = await child.output();
  child = undefined;
  const seconds = Math.round((performance.now() - started) / 1000);
  const stdout = new TextDecoder().decode(output.stdout);
  const stderr = new TextDecoder().decode(output.stderr);
  await Deno.writeTextFile(logFile, `${stderr}\n${stdout}`);
  // The summary of the one `deno test` run of the one mode.
  const summary = parseTestSummary(stdout);
  if (summary === undefined || summary.passed + summary.failed === 0) {
    return { result: "error", seconds };
  }
  if (summary.failed > 0) return { result: "killed", seconds };
  return { result: output.success ? "survived" : "error", seconds };
}

async function main(args: string[]): Promise<number> {
  onSignal("SIGINT", 130);
  onSignal("SIGTERM", 143);
  const { only, modes: asked } = parseMutantArgs(args, MUTANTS.map((m) => m.id));
  const mutants = only === null ? MUTANTS : MUTANTS.filter((m) => only.includes(m.id));
  const extensionDir = Deno.env.get(EXTENSION_DIR_VARIABLE) ?? "";
  let modes = asked ?? ["compat", "extension"];
  if (extensionDir === "" && modes.includes("extension")) {
    if (asked !== null) {
      throw new MutantArgsError(
        "extension",
        `--mode extension needs ${EXTENSION_DIR_VARIABLE}: the directory holding the real PGMQ ` +
          "extension's files (pgmq.control, pgmq--<version>.sql)",
      );
    }
    log(
      `${EXTENSION_DIR_VARIABLE} is not set: running the compat mode only (set it to the real ` +
        "PGMQ extension's files for the extension mode too)",
    );
    modes = ["compat"];
  }

  // A stale mutant is an error before anything runs.
  const originals = new Map<string, string>();
  const mutated = new Map<string, string>();
  for (const mutant of mutants) {
    const original = originals.get(mutant.file) ??
      await Deno.readTextFile(new URL(mutant.file, ROOT));
    originals.set(mutant.file, original);
    mutated.set(mutant.id, applyMutant(mutant, original));
  }

  scratch = await copyCheckout("sluice_mutants_");
  const logs = await Deno.makeTempDir({ prefix: "sluice_mutant_logs_" });
  const keptLogs: string[] = [];
  try {
    const guards = [...new Set(mutants.flatMap((m) => m.guards))].sort();
    for (const mode of modes) {
      log(`${mode}: the ${guards.length} guard files without a mutant`);
      const logFile = `${logs}/baseline_${mode}.log`;
      const baseline = await runGuards(scratch, guards, mode, logFile);
      if (baseline.result !== "survived") {
        log(`the guards do not pass without a mutant in ${mode} mode: see ${logFile}`);
        return 1;
      }
      log(`${mode}: the guards pass (${baseline.seconds} s)`);
    }

    const outcomes: MutantOutcome[] = [];
    for (const [index, mutant] of mutants.entries()) {
      const path = `${scratch}/${mutant.file}`;
      await Deno.writeTextFile(path, mutated.get(mutant.id)!);
      try {
        for (const mode of modes) {
          const logFile = `${logs}/${mutant.id}_${mode}.log`;
          const { result, seconds } = await runGuards(scratch, mutant.guards, mode, logFile);
          outcomes.push({ id: mutant.id, mode, result, seconds });
          if (result !== "killed") keptLogs.push(logFile);
          log(`${index + 1}/${mutants.length} ${mutant.id} (${mode}): ${result} in ${seconds} s`);
        }
      } finally {
        await Deno.writeTextFile(path, originals.get(mutant.file)!);
      }
    }

    console.log(formatMutantTable(outcomes));
    const bad = outcomes.filter((o) => o.result !== "killed");
    if (bad.length === 0) {
      console.log(`all ${mutants.length} mutants killed in ${modes.join(" and ")} mode`);
      await Deno.remove(logs, { recursive: true });
      return 0;
    }
    for (const o of bad) {
      const guards = mutants.find((m) => m.id === o.id)!.guards.join(" ");
      log(`${o.id} ${o.result} in ${o.mode} mode (guards: ${guards})`);
    }
    log(`logs: ${keptLogs.join(" ")}`);
    console.log(`${bad.length} of ${outcomes.length} mutant runs not killed`);
    return 1;
  } finally {
    await removeScratch();
  }
}

if (import.meta.main) {
  try {
    Deno.exit(await main(Deno.args));
  } catch (error) {
    console.error(error instanceof Error ? error.message : error);
    await removeScratch();
    Deno.exit(1);
  }
}
