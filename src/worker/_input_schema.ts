// The worker side of a flow's input schema (`new Flow({ slug, input })`): a root step's handler
// receives the run input only once the schema accepts it. startFlow with the flow object checked
// it already; a run started by name, by SQL or by a schedule was not.

import type { StepDefinition, StepHandler } from "../dsl/step_definition.ts";
import { type StandardSchemaV1, validateInput } from "../dsl/standard_schema.ts";

/**
 * The handler the worker calls for `step`: for a root single step of a flow with an input
 * schema, one that validates the run input first (an `InputValidationError` fails the attempt,
 * naming each issue) and passes the schema's value on; every other step's handler as it is.
 */
export function handlerWithInputCheck(
  flowSlug: string,
  schema: StandardSchemaV1 | undefined,
  step: StepDefinition,
): StepHandler {
  if (schema === undefined || step.type !== "single" || step.dependsOn.length > 0) {
    return step.handler;
  }
  const action = `Cannot run step ${JSON.stringify(step.slug)} of flow ${JSON.stringify(flowSlug)}`;
  return async (input, context) =>
    await step.handler(await validateInput(schema, input, flowSlug, action), context);
}
