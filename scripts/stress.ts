/**
 * `deno task test:stress [--runs N] [--burners K] <test files or directories...>`: runs the chosen
 * test files N times in a row (default 20) with `deno task test`, beside K processes that each
 * keep one CPU busy (default 2, `while :; do :; done` as a Deno loop), and fails on any run that
 * did not pass: a flake is a failure. `SLUICE_TEST_PGMQ` picks the PGMQ mode(s) as for
 * `deno task test`.
 *
 * Prints each run's counts and seconds, a table of every test that failed and how often, and the
 * load average before and after; exits non-zero when a run failed.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { loadAverage } from "../bench/_machine.ts";
import { failureReport } from "./_test_summary.ts";

const ROOT = new URL("../", import.meta.url);

function log(message: string): void {
  console.error(`stress: ${message}`);
}

/** The command line was not understood. */
export class StressArgsError extends Error {
  override readonly name = "StressArgsError";
  /** The offending argument. */
  readonly argument: string;
  constructor(argument: string, detail: string) {
    super(`test:stress: ${detail}, got ${JSON.stringify(argument)}`);
    this.argument = argument;
  }
}

/** What `deno task test:stress` was asked to do. */
export interface StressArgs {
  readonly runs: number;
  readonly burners: number;
  readonly paths: string[];
}

/** Reads the command line. */
export function parseStressArgs(args: string[]): StressArgs {
  const { values, positionals } = parseArgs({
    args,
    options: {
      runs: { type: "string", default: "20" },
      burners: { type: "string", default: "2" },
    },
    allowPositionals: true,
  });
  const runs = Number(values.runs);
  if (!Number.isInteger(runs) || runs < 1) {
    throw new StressArgsError(values.runs, "--runs must be an integer >= 1");
  }
  const burners = Number(values.burners);
  if (!Number.isInteger(burners) || burners < 0) {
    throw new StressArgsError(values.burners, "--burners must be an integer >= 0");
  }
  if (positionals.length === 0) {
    throw new StressArgsError("", "name the test files or directories to run");
  }
  return { runs, burners, paths: positionals };
}

/** The names of the failed tests in `deno test` output's ERRORS section. */
export function failedTests(output: string): string[] {
  const names: string[] = [];
  for (const line of failureReport(output, Number.MAX_SAFE_INTEGER).split("\n")) {
    const match = /^(.+) => (\S+_test\.ts:\d+:\d+)$/.exec(line.trim());
    if (match !== null) names.push(`${match[1]} (${match[2].replace(/^\.\//, "")})`);
  }
  return names;
}

const burners: Deno.ChildProcess[] = [];
let child: Deno.ChildProcess | undefined;

function stopAll(): void {
  for (const process of [...burners, child]) {
    try {
      process?.kill("SIGTERM");
    } catch {
      // Already exited.
    }
  }
}

async function main(args: string[]): Promise<number> {
  let parsed: StressArgs;
  try {
    parsed = parseStressArgs(args);
  } catch (error) {
    if (!(error instanceof StressArgsError)) throw error;
    console.error(error.message);
    return 2;
  }
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    Deno.addSignalListener(signal, () => {
      stopAll();
      Deno.exit(signal === "SIGINT" ? 130 : 143);
    });
  }
  const loadBefore = await loadAverage();
  for (let i = 0; i < parsed.burners; i++) {
    burners.push(
      new Deno.Command(Deno.execPath(), {
        args: ["eval", "for (;;) {}"],
        stdin: "null",
        stdout: "null",
        stderr: "null",
      }).spawn(),
    );
  }
  log(`${parsed.runs} runs of ${parsed.paths.join(" ")} beside ${parsed.burners} CPU burners`);
  const failures = new Map<string, number>();
  let failedRuns = 0;
  try {
    for (let run = 1; run <= parsed.runs; run++) {
      const started = performance.now();
      child = new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "scripts/test.ts", ...parsed.paths],
        cwd: ROOT,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const output = await child.output();
      child = undefined;
      const stdout = new TextDecoder().decode(output.stdout);
      const stderr = new TextDecoder().decode(output.stderr);
      const seconds = Math.round((performance.now() - started) / 1000);
      // The runner's last line sums its modes and phases: "N passed, N failed[, N skipped]".
      const passedCount = /^(\d+) passed, \d+ failed/m.exec(stdout.trim().split("\n").at(-1) ?? "")
        ?.[1];
      const names = failedTests(stdout);
      const passed = output.code === 0;
      if (!passed) {
        failedRuns += 1;
        if (names.length === 0) names.push("(no test failed: see the run's output)");
        for (const name of names) failures.set(name, (failures.get(name) ?? 0) + 1);
        const logFile = await Deno.makeTempFile({
          prefix: `sluice_stress_${run}_`,
          suffix: ".log",
        });
        await Deno.writeTextFile(logFile, `${stderr}\n${stdout}`);
        log(`run ${run}: FAILED (${seconds} s), log kept in ${logFile}`);
      } else {
        log(
          `run ${run}: ok, ${passedCount ?? 0} passed (${seconds} s)`,
        );
      }
    }
  } finally {
    stopAll();
    await Promise.all(burners.map((burner) => burner.status));
  }
  const loadAfter = await loadAverage();
  console.log(
    `${parsed.runs - failedRuns} of ${parsed.runs} runs passed beside ${parsed.burners} CPU ` +
      `burners; load average before ${loadBefore}, after ${loadAfter}`,
  );
  if (failures.size > 0) {
    console.log("\n| failed test | runs |\n| --- | --- |");
    for (const [name, count] of [...failures].sort((a, b) => b[1] - a[1])) {
      console.log(`| ${name.replaceAll("|", "\\|")} | ${count} |`);
    }
  }
  return failedRuns === 0 ? 0 : 1;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
