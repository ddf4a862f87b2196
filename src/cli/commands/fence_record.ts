/**
 * `deno task ops fence record`: writes the `enabled` values of the complete affected set of an
 * in-place rollout to the fence state file, for `fence restore` to put back exactly.
 *
 * @module
 */

import { readEnabledSwitches } from "../../db/fence_queries.ts";
import { DEFAULT_STATE_FILE, type FencedFunction, writeFenceState } from "./fence_state.ts";
import { diffManifests, type ManifestEntry, readManifest } from "./manifest.ts";
import { type OpsCommand, optionString, printListing } from "./command_types.ts";
import {
  DEFAULT_MANIFEST,
  FUNCTIONS_OPTION,
  functionsOption,
  MANIFEST_OPTION,
  STATE_OPTION,
} from "./_fence.ts";

/**
 * The `fence record` command. Exits 1, writing nothing, when a `--functions` name is in neither
 * manifest or a record already exists (without `--force`).
 *
 * @example Usage
 * ```ts ignore
 * import { fenceRecordCommand } from "./fence_record.ts";
 *
 * await fenceRecordCommand.run(sql, { positional: [], json: false, options: {} }, io);
 * ```
 */
export const fenceRecordCommand: OpsCommand = {
  name: "fence record",
  positional: [],
  options: [
    MANIFEST_OPTION,
    { name: "old-manifest", value: "FILE", summary: "the running deploy's manifest" },
    { ...FUNCTIONS_OPTION, summary: "limit the set to these functions (plus every change)" },
    STATE_OPTION,
    { name: "force", summary: "replace an existing record" },
  ],
  json: true,
  summary: "record the enabled values of a rollout's affected worker functions",
  description:
    "The affected set is every function of the new manifest and of --old-manifest. With\n" +
    "--functions it is those functions plus every function added, removed or changed between\n" +
    "the manifests, so a routing change is never left out. Untracked functions are recorded\n" +
    "as enabled (a function without a row starts its worker). An existing record is kept\n" +
    "unless --force: recording after fence disable would lose the values to restore.",
  async run(sql, args, io) {
    const manifestPath = optionString(args, "manifest", DEFAULT_MANIFEST);
    const oldPath = optionString(args, "old-manifest") ?? null;
    const next = await readManifest(manifestPath);
    const old: readonly ManifestEntry[] = oldPath === null ? [] : await readManifest(oldPath);
    const diff = diffManifests(old, next).map((entry) =>
      oldPath === null ? { ...entry, change: "unchanged" as const } : entry
    );
    const only = functionsOption(args);
    const unknown = only?.filter((name) => !diff.some((entry) => entry.function_name === name));
    if (unknown !== undefined && unknown.length > 0) {
      io.err(
        `Cannot record the fence: ${unknown.map((name) => JSON.stringify(name)).join(", ")} ` +
          `in neither manifest (${[manifestPath, oldPath].filter(Boolean).join(", ")})`,
      );
      return 1;
    }
    const affected = diff.filter((entry) =>
      only === undefined || only.includes(entry.function_name) || entry.change !== "unchanged"
    );
    const names = affected.map((entry) => entry.function_name);
    const rows = await readEnabledSwitches(sql, names);
    const functions: FencedFunction[] = affected.map((entry) => {
      const row = rows.find((candidate) => candidate.function_name === entry.function_name);
      return {
        function_name: entry.function_name,
        enabled: row?.enabled ?? true,
        tracked: row !== undefined,
        deployed: entry.new !== null,
        change: entry.change,
      };
    });
    const statePath = optionString(args, "state", DEFAULT_STATE_FILE);
    await writeFenceState(statePath, {
      recorded_at: new Date().toISOString(),
      manifest: manifestPath,
      old_manifest: oldPath,
      functions,
    }, args.options.force === true);
    const printed = printListing(io, args, functions, {
      empty: "The manifests list no worker functions; nothing to fence.",
      headers: ["FUNCTION", "ENABLED", "TRACKED", "CHANGE", "IN NEW DEPLOY"],
      cells: (row) => [
        row.function_name,
        row.enabled ? "yes" : "no",
        row.tracked ? "yes" : "no",
        row.change,
        row.deployed ? "yes" : "no",
      ],
      align: ["left", "left", "left", "left", "left"],
    });
    if (printed) io.out(`\nRecorded ${functions.length} worker functions in ${statePath}.`);
    return 0;
  },
};
