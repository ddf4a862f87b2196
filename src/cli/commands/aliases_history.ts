/**
 * `deno task ops aliases history <alias>`: every activation of one alias, oldest first, from its
 * append-only history.
 *
 * @module
 */

import { getAliasHistory } from "../../deploy/aliases.ts";
import { type OpsCommand, printListing } from "./command_types.ts";
import { formatIsoTime } from "../../dashboard/format.ts";

/**
 * The `aliases history` command. Exits 1 when no alias of that name was ever activated.
 *
 * @example Usage
 * ```ts ignore
 * import { aliasesHistoryCommand } from "./aliases_history.ts";
 *
 * await aliasesHistoryCommand.run(sql, { positional: ["orders"], json: false, options: {} }, io);
 * ```
 */
export const aliasesHistoryCommand: OpsCommand = {
  name: "aliases history",
  positional: ["alias"],
  json: true,
  summary: "every activation of an alias: generation, from and to which flow, when, by whom",
  description:
    "Reads sluice.alias_history, oldest first: each activation with the flow the alias\n" +
    "pointed at before (`-` when it created the alias), who activated it (the --by text or\n" +
    "the database user) and whether the live-worker check was forced.",
  async run(sql, args, io) {
    const [alias] = args.positional;
    const history = await getAliasHistory(sql, alias);
    if (history.length === 0) {
      io.err(
        `Cannot show the history of alias ${JSON.stringify(alias)}: no such alias ` +
          "(see aliases list)",
      );
      return 1;
    }
    printListing(io, args, history, {
      empty: "No activations.",
      headers: ["GENERATION", "FROM", "TO", "ACTIVATED AT", "BY", "FORCED"],
      cells: (entry) => [
        String(entry.generation),
        entry.previousFlowSlug ?? "-",
        entry.flowSlug,
        formatIsoTime(entry.activatedAt),
        entry.activatedBy,
        entry.forced ? "forced" : "-",
      ],
      align: ["right", "left", "left", "left", "left", "left"],
    });
    return 0;
  },
};
