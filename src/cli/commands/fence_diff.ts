/**
 * `deno task ops fence diff --old-manifest OLD [--manifest NEW]`: the worker functions added,
 * removed and changed between the manifest of the running deploy and the new one.
 *
 * @module
 */

import { describeRoute, diffManifests, readManifest } from "./manifest.ts";
import { type OpsCommand, optionString, printListing } from "./command_types.ts";
import { DEFAULT_MANIFEST, MANIFEST_OPTION } from "./_fence.ts";

/**
 * The `fence diff` command. Exits 0; it reads no database state beyond the install check.
 *
 * @example Usage
 * ```ts ignore
 * import { fenceDiffCommand } from "./fence_diff.ts";
 *
 * await fenceDiffCommand.run(sql, { positional: [], json: false, options: { "old-manifest": "old.json" } }, io);
 * ```
 */
export const fenceDiffCommand: OpsCommand = {
  name: "fence diff",
  positional: [],
  options: [
    { name: "old-manifest", value: "FILE", summary: "the manifest of the running deploy" },
    MANIFEST_OPTION,
  ],
  json: true,
  summary: "worker functions added, removed and changed between two manifests",
  description:
    "Compares the manifest of the running deploy (--old-manifest, e.g. from the last release\n" +
    "tag) with the new one. A changed function serves another flow, step or queue. Every\n" +
    "added, removed or changed function belongs to the affected set of an in-place rollout.",
  async run(_sql, args, io) {
    const old = optionString(args, "old-manifest");
    if (old === undefined) {
      io.err("Cannot run ops fence diff: --old-manifest FILE is required");
      return 2;
    }
    const diff = diffManifests(
      await readManifest(old),
      await readManifest(optionString(args, "manifest", DEFAULT_MANIFEST)),
    );
    printListing(io, args, diff, {
      empty: "Both manifests are empty.",
      headers: ["FUNCTION", "CHANGE", "OLD ROUTE", "NEW ROUTE"],
      cells: (
        row,
      ) => [row.function_name, row.change, describeRoute(row.old), describeRoute(row.new)],
      align: ["left", "left", "left", "left"],
    });
    return 0;
  },
};
