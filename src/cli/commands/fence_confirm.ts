/**
 * `deno task ops fence confirm`: route coverage for the new manifest — every route one of its
 * functions serves has a live worker that is not deprecated.
 *
 * @module
 */

import { readManifestCoverage } from "../../db/fence_queries.ts";
import { readManifest } from "./manifest.ts";
import { type OpsCommand, optionString, printListing } from "./command_types.ts";
import { DEFAULT_MANIFEST, FUNCTIONS_OPTION, functionsOption, MANIFEST_OPTION } from "./_fence.ts";

/**
 * The `fence confirm` command. Exits 0 when every route has a worker, 1 otherwise (also when a
 * function's flow is not compiled: no worker of it ever started).
 *
 * @example Usage
 * ```ts ignore
 * import { fenceConfirmCommand } from "./fence_confirm.ts";
 *
 * await fenceConfirmCommand.run(sql, { positional: [], json: false, options: {} }, io);
 * ```
 */
export const fenceConfirmCommand: OpsCommand = {
  name: "fence confirm",
  positional: [],
  options: [MANIFEST_OPTION, {
    ...FUNCTIONS_OPTION,
    summary: "check only these functions of the manifest",
  }],
  json: true,
  summary: "check that every route of the new manifest has a live worker; exit 1 if not",
  description:
    "For each function of the manifest, each route it serves (every step of a plain flow,\n" +
    "one step of a step function, each co-hosted step of a co-hosting function) with the\n" +
    "live workers on it that are not deprecated. A\n" +
    "route without one is MISSING (its flow not even compiled: NOT COMPILED): exit 1.\n" +
    "--functions checks only the named functions, e.g. the ones this deploy runs.",
  async run(sql, args, io) {
    const listed = await readManifest(optionString(args, "manifest", DEFAULT_MANIFEST));
    const only = functionsOption(args);
    const unknown = only?.filter((name) => !listed.some((entry) => entry.function_name === name));
    if (unknown !== undefined && unknown.length > 0) {
      throw new RangeError(
        `--functions names ${unknown.map((name) => JSON.stringify(name)).join(", ")}, which the ` +
          "manifest does not list",
      );
    }
    const manifest = only === undefined
      ? listed
      : listed.filter((entry) => only.includes(entry.function_name));
    // A co-hosting function serves the route of every worker it lists.
    const routes = manifest.flatMap((entry) =>
      entry.workers?.map((worker) => ({ ...worker, function_name: entry.function_name })) ??
        [entry]
    );
    const rows = await readManifestCoverage(sql, routes);

    printListing(io, args, rows, {
      empty: "The manifest lists no worker functions.",
      headers: ["FUNCTION", "FLOW", "STEP", "QUEUE", "WORKERS", "STATUS"],
      cells: (row) => [
        row.function_name,
        row.flow_slug,
        row.step_slug ?? "*",
        row.queue_name,
        String(row.live_workers),
        !row.compiled ? "NOT COMPILED" : row.live_workers === 0 ? "MISSING" : "ok",
      ],
      align: ["left", "left", "left", "left", "right", "left"],
    });
    const missing = rows.filter((row) => row.live_workers === 0);
    if (missing.length === 0) {
      if (!args.json) io.out(`\nAll ${rows.length} routes of the manifest have a live worker.`);
      return 0;
    }
    io.err(
      `${missing.length} of ${rows.length} routes of the manifest have no live worker: ${
        missing.map((row) => `${row.flow_slug}.${row.step_slug ?? "*"}`).join(", ")
      }`,
    );
    const uncompiled = [...new Set(missing.filter((row) => !row.compiled).map((r) => r.flow_slug))];
    if (uncompiled.length > 0) {
      io.err(
        `NOT COMPILED: no worker of ${
          uncompiled.map((slug) => JSON.stringify(slug)).join(", ")
        } ever started in this database. If this deploy does not run ${
          uncompiled.length === 1 ? "that flow" : "those flows"
        }, confirm only the functions it does run: fence confirm --functions NAME,... (or ` +
          "--manifest FILE with a manifest of them); otherwise deploy their functions first",
      );
    }
    return 1;
  },
};
