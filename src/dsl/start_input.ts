/**
 * The value a start sends as its run input, the same for `startFlow` and the browser's `startRun`.
 *
 * @module
 */

import { inputByName } from "./json_text.ts";
import { routingOf } from "./routing.ts";
import { validateInput } from "./standard_schema.ts";
import type { DeployableFlow } from "./types.ts";

/**
 * The run input of a start: by name, JSON object or array text parsed (`inputByName`); with a
 * flow object, the input as given, or its input schema's value once the schema accepted it.
 *
 * @param flow The flow object, or the flow's name.
 * @param input The caller's input.
 * @param action What could not be done, e.g. `Cannot start flow "orders"`.
 * @throws {InputValidationError} When the flow's input schema refuses the input.
 */
export async function startInput(
  flow: DeployableFlow | string,
  input: unknown,
  action: string,
): Promise<unknown> {
  if (typeof flow === "string") return inputByName(input);
  const { inputSchema, slug } = routingOf(flow).flow;
  return inputSchema === undefined ? input : await validateInput(inputSchema, input, slug, action);
}
