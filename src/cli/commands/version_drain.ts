/**
 * `deno task ops version-drain <flow_slug> [--wait]`: what a concrete flow (typically the old
 * version after an alias switch) still holds, from `sluice.version_drain`, and what to do next.
 *
 * @module
 */

import { getVersionDrain, type VersionDrain } from "../../deploy/aliases.ts";
import { liveWorkerFunctionsOf } from "../../db/ops_queries.ts";
import type { Sql } from "../../db/driver/postgres.ts";
import { type OpsCommand, type OpsIo, optionString, parseDuration } from "./command_types.ts";
import { timeoutMs, timeoutOption, waitWithProgress } from "./_wait.ts";

const DEFAULT_TIMEOUT = "10m";
const DEFAULT_INTERVAL = "1s";

/** The counts that keep a version's work from being drained, as one line. */
function progressLine(drain: VersionDrain): string {
  return `version ${drain.flowSlug}: ${drain.activeRuns} active runs, ${drain.queuedTasks} ` +
    `queued tasks, ${drain.startedTasks} started tasks, ${drain.liveWorkers} live workers`;
}

/** Prints the drain state and the next step it allows. */
async function printReport(sql: Sql, drain: VersionDrain, io: OpsIo): Promise<void> {
  const slug = drain.flowSlug;
  const functions = await liveWorkerFunctionsOf(sql, slug);
  const quoted = (names: readonly string[]) => names.map((name) => `"${name}"`).join(", ");
  io.out(`Flow "${slug}":`);
  io.out(`  active runs    ${drain.activeRuns}`);
  io.out(`  queued tasks   ${drain.queuedTasks}`);
  io.out(`  started tasks  ${drain.startedTasks}`);
  io.out(
    `  live workers   ${drain.liveWorkers}${
      functions.length === 0 ? "" : ` (worker functions ${functions.join(", ")})`
    }`,
  );
  io.out(`  aliases        ${drain.aliases.length === 0 ? "none" : drain.aliases.join(", ")}`);
  io.out(
    `  its own name   ${
      drain.selfAliasPointsAt === null
        ? "no alias"
        : drain.selfAliasPointsAt === slug
        ? `still starts "${slug}"`
        : `points at "${drain.selfAliasPointsAt}"`
    }`,
  );
  io.out("");
  if (drain.aliases.length > 0) {
    io.out(
      `Alias ${quoted(drain.aliases)} still points at "${slug}": new runs arrive through it; ` +
        "activate it on another flow first (aliases activate).",
    );
  }
  if (drain.selfAliasPointsAt === slug) {
    io.out(
      `Runs started by the name "${slug}" still start this flow: re-point it first ` +
        `(aliases activate ${slug} <new_flow> --expect-generation N) to retire this version.`,
    );
  }
  if (!drain.workDrained) {
    io.out(
      `Not drained: its workers must keep running until its ${drain.activeRuns} active runs ` +
        `finish (version-drain ${slug} --wait waits for that).`,
    );
  } else if (!drain.drained) {
    io.out(
      "Work drained: no active run and no queued or started task." + (functions.length === 0
        ? ""
        : ` Next: stop its workers (functions disable ${functions.join(" ")}, then ` +
          `functions deprecate ${functions.join(" ")}),`) +
        ` then delete it with flows reset ${slug} (its runs are deleted for good).`,
    );
  } else {
    io.out(
      "Drained: no active run, no queued or started task, no live worker and no alias. " +
        `Delete it with flows reset ${slug} once its runs are no longer needed (they are ` +
        "deleted for good).",
    );
  }
}

/**
 * The `version-drain` command. Exits 0 with the state (with `--wait`, once the work has drained),
 * 1 for an unknown flow or when `--wait` times out.
 *
 * @example Usage
 * ```ts ignore
 * import { versionDrainCommand } from "./version_drain.ts";
 *
 * await versionDrainCommand.run(sql, { positional: ["orders"], json: false, options: {} }, io);
 * ```
 */
export const versionDrainCommand: OpsCommand = {
  name: "version-drain",
  positional: ["flow_slug"],
  options: [
    { name: "wait", summary: "wait until no active run and no queued or started task is left" },
    timeoutOption(DEFAULT_TIMEOUT),
    {
      name: "interval",
      value: "DURATION",
      summary: `with --wait, check this often (500ms, 5s; default ${DEFAULT_INTERVAL})`,
    },
  ],
  json: true,
  summary: "what an old version still holds: active runs, tasks, live workers, aliases",
  description:
    "Reads sluice.version_drain for one concrete flow. `work drained`: no active run and no\n" +
    "queued or started task, so its workers may stop. `drained`: that, no live worker and no\n" +
    "alias pointing at it, so it may be deleted (flows reset). With --wait, waits (printing\n" +
    "progress) until the work has drained and exits 1 if it has not within --timeout.",
  async run(sql, args, io) {
    const [slug] = args.positional;
    const limitMs = timeoutMs(args, DEFAULT_TIMEOUT);
    const intervalMs = parseDuration("interval", optionString(args, "interval", DEFAULT_INTERVAL));
    const first = await getVersionDrain(sql, slug);
    if (first === null) {
      io.err(
        `Cannot read the drain of flow ${JSON.stringify(slug)}: no flow has that slug (an ` +
          "alias is not a flow; aliases list shows where each points)",
      );
      return 1;
    }
    let drain = first;
    let drained = true;
    if (args.options.wait === true) {
      // With --json, stdout carries only the JSON; progress goes to stderr.
      const progressIo = args.json ? { out: io.err, err: io.err } : io;
      drained = await waitWithProgress(progressIo, limitMs, async () => {
        drain = await getVersionDrain(sql, slug) ?? drain;
        return { done: drain.workDrained, progress: progressLine(drain) };
      }, intervalMs);
    }
    if (args.json) io.out(JSON.stringify(drain, null, 2));
    else await printReport(sql, drain, io);
    if (drained) return 0;
    io.err(
      `Cannot finish the version drain of ${JSON.stringify(slug)} within ` +
        `${optionString(args, "timeout", DEFAULT_TIMEOUT)}: ${progressLine(drain)}`,
    );
    return 1;
  },
};
