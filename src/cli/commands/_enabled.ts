// Printing what setting `enabled` of worker functions changed: `functions enable|disable` and the
// fence.

import type { EnabledChange } from "../../db/ops_queries.ts";
import { type OpsIo, printListing } from "./command_types.ts";

/** Prints what `setWorkerFunctionsEnabled` changed: a table, or JSON with `--json`. */
export function printEnabledChanges(
  io: OpsIo,
  json: boolean,
  changes: readonly EnabledChange[],
): void {
  const flag = (value: boolean) => value ? "enabled" : "disabled";
  printListing(io, { json, positional: [], options: {} }, changes, {
    empty: "No worker functions to change.",
    headers: ["FUNCTION", "WAS", "NOW"],
    cells: (row) => [
      row.function_name,
      row.was_tracked ? flag(row.previous_enabled) : "untracked",
      flag(row.enabled),
    ],
    align: ["left", "left", "left"],
  });
}
