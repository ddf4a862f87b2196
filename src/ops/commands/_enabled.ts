// Setting `enabled` of worker functions, shared by `functions enable|disable` and the fence.

import type { Sql } from "../../db/postgres.ts";
import { type OpsIo, printListing } from "./_command.ts";

/** One function whose `enabled` was set, with its previous value. */
export interface EnabledChange extends Record<string, unknown> {
  function_name: string;
  was_tracked: boolean;
  previous_enabled: boolean;
  enabled: boolean;
}

/** Sets `enabled` per function in one transaction (`sluice.set_worker_functions_enabled`). */
export async function setEnabled(
  sql: Sql,
  settings: Readonly<Record<string, boolean>>,
): Promise<EnabledChange[]> {
  return await sql<EnabledChange[]>`
    select function_name, was_tracked, previous_enabled, enabled
    from sluice.set_worker_functions_enabled(${sql.json(settings)}::jsonb)
  `;
}

/** Prints what {@linkcode setEnabled} changed: a table, or JSON with `--json`. */
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

/**
 * Names among `names` that have no row in `sluice.worker_functions`, so a typo is reported
 * instead of creating a row.
 */
export async function unknownFunctions(sql: Sql, names: readonly string[]): Promise<string[]> {
  const rows = await sql<{ name: string }[]>`
    select n as name from unnest(${names as string[]}::text[]) n
    where not exists (select 1 from sluice.worker_functions wf where wf.function_name = n)
    order by n collate "C"
  `;
  return rows.map((row) => row.name);
}
