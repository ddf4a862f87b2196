/**
 * `deno task ops aliases activate <alias> <flow_slug> --expect-generation N`: re-points an alias
 * (or creates one) by compare-and-swap on its generation, never retrying a lost race.
 *
 * @module
 */

import { activateAlias, getAliasHistory } from "../../deploy/aliases.ts";
import { AliasConflictError, AliasWorkersMissingError } from "../../deploy/errors.ts";
import { type OpsCommand, optionString } from "./command_types.ts";

/**
 * The `aliases activate` command. Exits 0 when the alias points at the flow, 1 when another
 * activation won the race or a step of the flow has no live worker (nothing changed), 2 without
 * a valid `--expect-generation`.
 *
 * @example Usage
 * ```ts ignore
 * import { aliasesActivateCommand } from "./aliases_activate.ts";
 *
 * await aliasesActivateCommand.run(sql, {
 *   positional: ["orders", "orders_v2"],
 *   json: false,
 *   options: { "expect-generation": "1" },
 * }, io);
 * ```
 */
export const aliasesActivateCommand: OpsCommand = {
  name: "aliases activate",
  positional: ["alias", "flow_slug"],
  options: [
    {
      name: "expect-generation",
      value: "N",
      summary: "required: the alias's generation as aliases list shows it (0 creates an alias)",
    },
    {
      name: "force",
      summary: "activate even if a step of the flow has no live worker (its tasks wait)",
    },
    { name: "by", value: "TEXT", summary: "who activates, for the history (default: db user)" },
  ],
  json: false,
  summary: "point an alias at a flow by compare-and-swap on its generation",
  description:
    "Calls sluice.activate_alias: points the alias at the compiled flow only if its generation\n" +
    "is still the one given (another activation since then wins; this one changes nothing and\n" +
    "exits 1 without retrying: read the alias again and decide). Runs already started keep\n" +
    "their flow; runs started through the alias afterwards start on the new one. Without\n" +
    "--force, every step of the flow needs a live, non-deprecated worker first.",
  async run(sql, args, io) {
    const [alias, flowSlug] = args.positional;
    const expected = optionString(args, "expect-generation");
    if (expected === undefined || !/^\d{1,15}$/.test(expected)) {
      io.err(
        `Cannot activate alias ${JSON.stringify(alias)}: --expect-generation N is required, ` +
          `the alias's current generation${
            expected === undefined ? "" : ` (got ${JSON.stringify(expected)})`
          }; read it with \`aliases list\` (GENERATION), or give 0 to create a new alias`,
      );
      return 2;
    }
    const expectedGeneration = Number(expected);
    try {
      const generation = await activateAlias(sql, alias, flowSlug, {
        expectedGeneration,
        force: args.options.force === true,
        activatedBy: optionString(args, "by"),
      });
      if (generation === expectedGeneration) {
        io.out(
          `Alias ${JSON.stringify(alias)} already points at flow ${JSON.stringify(flowSlug)} ` +
            `at generation ${generation}; nothing changed.`,
        );
      } else {
        // The history row of this generation says what the alias pointed at before, race-free.
        const entry = (await getAliasHistory(sql, alias)).find((row) =>
          row.generation === generation
        );
        const previous = entry?.previousFlowSlug ?? null;
        io.out(
          `Activated alias ${JSON.stringify(alias)} on flow ${JSON.stringify(flowSlug)}: ` +
            `generation ${generation}${
              previous === null ? " (new alias)" : ` (was flow ${JSON.stringify(previous)})`
            }. Runs started through it from now on start on ${flowSlug}.`,
        );
      }
      return 0;
    } catch (error) {
      if (error instanceof AliasConflictError) {
        io.err(
          `${error.message}. Another activation won; nothing changed. Read the alias again ` +
            "(aliases list, aliases history) and decide whether to activate.",
        );
        return 1;
      }
      if (error instanceof AliasWorkersMissingError) {
        io.err(`${error.message}. Nothing changed.`);
        return 1;
      }
      throw error;
    }
  },
};
