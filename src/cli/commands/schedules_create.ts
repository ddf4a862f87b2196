/**
 * `deno task ops schedules create <name> (--flow SLUG | --alias NAME) --cron EXPR`: schedules runs
 * of a concrete flow or of an alias.
 *
 * @module
 */

import { FlowNotFoundError } from "../../client/errors.ts";
import { schedule, scheduleFlowVersion } from "../../client/schedules.ts";
import { unknownFlowHint } from "./flow_names.ts";
import { InvalidCronError, InvalidTimezoneError } from "../../dsl/schedule_times.ts";
import type { Json } from "../../dsl/json.ts";
import { type OpsCommand, optionString } from "./command_types.ts";
import { formatIsoTime } from "../../dashboard/format.ts";

/**
 * The `schedules create` command. Exits 0 when the schedule exists as asked, 2 for a bad cron
 * expression, time zone, `--missed` or `--input`, or without exactly one of `--flow` and `--alias`
 * (nothing is written), 1 when the flow or alias is unknown or the name is taken by another schedule.
 *
 * @example Usage
 * ```ts ignore
 * import { schedulesCreateCommand } from "./schedules_create.ts";
 *
 * await schedulesCreateCommand.run(sql, {
 *   positional: ["nightly"],
 *   json: false,
 *   options: { alias: "greet_user", cron: "0 3 * * *", input: '{"name":"Ada"}' },
 * }, io);
 * ```
 */
export const schedulesCreateCommand: OpsCommand = {
  name: "schedules create",
  positional: ["name"],
  options: [
    { name: "flow", value: "SLUG", summary: "start this concrete flow at each tick" },
    { name: "alias", value: "NAME", summary: "start the alias's current flow at each tick" },
    { name: "cron", value: "EXPR", summary: "required: 5 fields, or 6 with seconds first" },
    { name: "input", value: "JSON", summary: "the input of every run (default: {})" },
    { name: "timezone", value: "TZ", summary: "IANA time zone of the cron fields (default: UTC)" },
    { name: "missed", value: "POLICY", summary: "missed ticks: run-once (default) or skip" },
  ],
  json: false,
  summary: "schedule runs of a flow or an alias on a cron expression",
  description:
    "Creates a schedule (sluice.create_schedule); the cron expression and time zone are checked\n" +
    "first. Every tick starts exactly one run, fired by the workers' heartbeats (or pg_cron).\n" +
    "--alias follows version switches: each tick starts the flow the alias points at then.\n" +
    "Creating the same schedule again changes nothing; other settings under a taken name are\n" +
    "refused (delete it first).",
  async run(sql, args, io) {
    const [name] = args.positional;
    const flow = optionString(args, "flow");
    const alias = optionString(args, "alias");
    const cron = optionString(args, "cron");
    const fail = (message: string) => {
      io.err(`Cannot create schedule ${JSON.stringify(name)}: ${message}`);
      return 2;
    };
    if ((flow === undefined) === (alias === undefined)) {
      return fail("give exactly one of --flow SLUG (a concrete flow) and --alias NAME");
    }
    if (cron === undefined) return fail('--cron EXPR is required, e.g. --cron "0 3 * * *"');
    const missed = optionString(args, "missed", "run-once");
    if (missed !== "run-once" && missed !== "skip") {
      return fail(`--missed must be run-once or skip, got ${JSON.stringify(missed)}`);
    }
    let input: Json;
    try {
      input = JSON.parse(optionString(args, "input", "{}"));
    } catch (error) {
      return fail(`--input is not JSON: ${(error as Error).message}`);
    }
    try {
      const options = {
        name,
        cron,
        input,
        missed,
        timezone: optionString(args, "timezone"),
      } as const;
      const created = flow === undefined
        ? await schedule(sql, alias!, options)
        : await scheduleFlowVersion(sql, flow, options);
      io.out(
        `Schedule ${JSON.stringify(created.name)} starts ${created.targetKind} ` +
          `${JSON.stringify(created.target)} on "${created.cron}" (${created.timezone}); ` +
          `next tick ${formatIsoTime(created.nextDueAt)}.`,
      );
      return 0;
    } catch (error) {
      if (error instanceof InvalidCronError || error instanceof InvalidTimezoneError) {
        return fail(error.message);
      }
      if (error instanceof FlowNotFoundError) {
        const hint = await unknownFlowHint(sql, error.flowRef, { aliases: alias !== undefined });
        io.err(`Cannot create schedule ${JSON.stringify(name)}: ${hint ?? error.message}`);
        return 1;
      }
      throw error;
    }
  },
};
