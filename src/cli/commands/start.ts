/**
 * `deno task sluice start <flow> [--input JSON] [--idempotency-key KEY]`: starts a run by alias
 * or concrete slug (`startFlow`, docs/producers.md) and prints its id.
 *
 * @module
 */

import { FlowNotFoundError, LimitExceededError } from "../../client/errors.ts";
import { startFlow } from "../../client/start_flow.ts";
import { JsonSizeError } from "../../dsl/errors.ts";
import type { Json } from "../../dsl/json.ts";
import { IdempotencyConflictError, StartOptionError } from "../../dsl/start_options.ts";
import { unknownFlowHint } from "./flow_names.ts";
import { type OpsCommand, optionString, printJson } from "./command_types.ts";

/**
 * The `start` command. Exits 0 with the run id, 2 for an `--input` that is not JSON or a bad
 * `--idempotency-key` (nothing is written), 1 for an unknown flow (with the closest name), an
 * input over a limit, or a key that started a run with another input.
 *
 * @example Usage
 * ```ts ignore
 * import { startCommand } from "./start.ts";
 *
 * await startCommand.run(sql, {
 *   positional: ["orders"],
 *   json: false,
 *   options: { input: '{"orderId": 7}' },
 * }, io);
 * ```
 */
export const startCommand: OpsCommand = {
  name: "start",
  positional: ["flow"],
  options: [
    { name: "input", value: "JSON", summary: "the run input, as JSON text (default: {})" },
    {
      name: "idempotency-key",
      value: "KEY",
      summary: "a start under this key again returns the same run",
    },
  ],
  json: true,
  summary: "start a run of a flow by alias or slug, with a JSON input",
  description:
    "Calls sluice.start_flow: FLOW is resolved as an alias first, then as a concrete slug, and\n" +
    "the run starts with --input parsed as JSON (`--input '{\"orderId\": 7}'` is the object).\n" +
    "Prints the run id; `deno task sluice run <run_id> --watch` follows it.",
  async run(sql, args, io) {
    const [flow] = args.positional;
    const action = `Cannot start flow ${JSON.stringify(flow)}`;
    let input: Json;
    try {
      input = JSON.parse(optionString(args, "input", "{}"));
    } catch (error) {
      io.err(`${action}: --input is not JSON: ${(error as Error).message}`);
      return 2;
    }
    try {
      const idempotencyKey = optionString(args, "idempotency-key");
      const runId = await startFlow(sql, flow, input, { idempotencyKey });
      if (args.json) printJson(io, [{ runId, flow }]);
      else io.out(runId);
      return 0;
    } catch (error) {
      if (error instanceof StartOptionError) {
        io.err(error.message);
        return 2;
      }
      if (error instanceof FlowNotFoundError) {
        io.err(
          `${action}: ${(await unknownFlowHint(sql, flow, { aliases: true })) ?? error.message}`,
        );
        return 1;
      }
      if (
        error instanceof IdempotencyConflictError || error instanceof LimitExceededError ||
        error instanceof JsonSizeError
      ) {
        io.err(error.message);
        return 1;
      }
      throw error;
    }
  },
};
