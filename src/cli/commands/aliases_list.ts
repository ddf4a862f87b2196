/**
 * `deno task ops aliases list`: every alias with the concrete flow it starts runs on, its
 * generation and when it was last activated.
 *
 * @module
 */

import { readAliases } from "../../db/alias_queries.ts";
import { type OpsCommand, printListing } from "./command_types.ts";
import { formatIsoTime } from "../../dashboard/format.ts";

/**
 * The `aliases list` command. Exits 0 when the aliases could be read.
 *
 * @example Usage
 * ```ts ignore
 * import { aliasesListCommand } from "./aliases_list.ts";
 *
 * await aliasesListCommand.run(sql, { positional: [], json: false, options: {} }, io);
 * ```
 */
export const aliasesListCommand: OpsCommand = {
  name: "aliases list",
  positional: [],
  json: true,
  summary: "every alias: the flow it starts, its generation, self-alias or re-pointed",
  description:
    "Lists sluice.aliases by name. KIND is `self` for a flow's own name pointing at it,\n" +
    "`re-pointed` for a flow's own name now pointing at another flow (a V1 -> V2 upgrade), and\n" +
    "`alias` for a name created by an activation. GENERATION is what `aliases activate\n" +
    "--expect-generation` takes to re-point the alias.",
  async run(sql, args, io) {
    printListing(io, args, await readAliases(sql), {
      empty: "No aliases: no flow is compiled yet.",
      headers: ["ALIAS", "FLOW", "GENERATION", "ACTIVATED AT", "KIND"],
      cells: (row) => [
        row.alias,
        row.flow_slug,
        String(row.generation),
        formatIsoTime(row.activated_at),
        row.kind,
      ],
      align: ["left", "left", "right", "left", "left"],
    });
    return 0;
  },
};
