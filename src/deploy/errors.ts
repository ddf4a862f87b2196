/**
 * Errors of putting a flow version in service, thrown for both the producer API and the worker's
 * startup: a flow whose compiled shape differs from its definition, a lost alias activation, an
 * alias target without live workers.
 *
 * @module
 */

/**
 * Thrown by `compileFlow()` (and so by `startWorker()`) in production when the flow's concrete
 * slug is already compiled with a different shape. Nothing was changed in the database. A
 * compiled flow never changes shape: deploy the new shape under a new concrete slug.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, Flow, FlowShapeMismatchError } from "@sluice/sluice";
 * import { compileFlow } from "@sluice/sluice/admin";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * const flow = new Flow({ slug: "orders" }).step({ slug: "fetch" }, () => 1);
 * try {
 *   await compileFlow(sql, flow);
 * } catch (error) {
 *   if (error instanceof FlowShapeMismatchError) console.error(error.differences);
 * }
 * ```
 */
export class FlowShapeMismatchError extends Error {
  /** Always `"FlowShapeMismatchError"`. */
  override name = "FlowShapeMismatchError";
  /** The concrete flow slug. */
  readonly flowSlug: string;
  /** Human-readable differences between the compiled flow and the definition. */
  readonly differences: readonly string[];

  /**
   * Creates the error; the message lists the differences.
   *
   * @param flowSlug The concrete flow slug.
   * @param differences What differs, one entry per difference.
   */
  constructor(flowSlug: string, differences: readonly string[]) {
    super(
      `Cannot compile flow ${JSON.stringify(flowSlug)}: the definition differs from the compiled ` +
        `flow of that slug (${differences.length} ${
          differences.length === 1 ? "difference" : "differences"
        }):\n${differences.map((difference) => `  - ${difference}`).join("\n")}\n` +
        `A compiled flow never changes shape in production: deploy the new shape under a new ` +
        `concrete slug (e.g. ${JSON.stringify(nextVersionSlug(flowSlug))}), start its workers, ` +
        `then switch callers to it. In development, run the workers with environment ` +
        `"development" (SLUICE_ENVIRONMENT=development, or sluice dev), which recompiles the flow ` +
        `once its old workers drain, or delete the flow and its data with ` +
        `\`sluice flows reset ${flowSlug}\``,
    );
    this.flowSlug = flowSlug;
    this.differences = Object.freeze([...differences]);
  }
}

/** `orders` -> `orders_v2`, `orders_v2` -> `orders_v3`. */
function nextVersionSlug(slug: string): string {
  const match = /^(.*_v)(\d+)$/.exec(slug);
  return match === null ? `${slug}_v2` : `${match[1]}${Number(match[2]) + 1}`;
}

/**
 * Thrown by `activateAlias()` when the alias is no longer at the expected generation: another
 * activation won the compare-and-swap. Nothing changed. Read the alias again and decide whether
 * to activate; retrying blindly would undo the other activation.
 *
 * @example Usage
 * ```ts ignore
 * import { connect } from "@sluice/sluice";
 * import { activateAlias, AliasConflictError } from "@sluice/sluice/admin";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * try {
 *   await activateAlias(sql, "orders", "orders_v2", { expectedGeneration: 1 });
 * } catch (error) {
 *   if (error instanceof AliasConflictError) console.error(error.actualFlowSlug);
 * }
 * ```
 */
export class AliasConflictError extends Error {
  /** Always `"AliasConflictError"`. */
  override name = "AliasConflictError";
  /** The alias. */
  readonly alias: string;
  /** The flow the caller tried to activate. */
  readonly flowSlug: string;
  /** The generation the caller expected. */
  readonly expectedGeneration: number;
  /** The alias's generation when the activation ran (0: no such alias). */
  readonly actualGeneration: number;
  /** The flow the alias pointed at then (`null`: no such alias). */
  readonly actualFlowSlug: string | null;

  /**
   * Creates the error.
   *
   * @param message The database's message.
   * @param fields The alias, the flows and the generations.
   */
  constructor(message: string, fields: {
    readonly alias: string;
    readonly flowSlug: string;
    readonly expectedGeneration: number;
    readonly actualGeneration: number;
    readonly actualFlowSlug: string | null;
  }) {
    super(message);
    this.alias = fields.alias;
    this.flowSlug = fields.flowSlug;
    this.expectedGeneration = fields.expectedGeneration;
    this.actualGeneration = fields.actualGeneration;
    this.actualFlowSlug = fields.actualFlowSlug;
  }
}

/**
 * Thrown by `activateAlias()` (without `force`) when a step of the target flow has no live,
 * non-deprecated worker: runs started through the alias would wait. Nothing changed. Start the
 * missing workers, or activate with `force` to let the tasks wait durably.
 *
 * @example Usage
 * ```ts ignore
 * import { connect } from "@sluice/sluice";
 * import { activateAlias, AliasWorkersMissingError } from "@sluice/sluice/admin";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * try {
 *   await activateAlias(sql, "orders", "orders_v2", { expectedGeneration: 1 });
 * } catch (error) {
 *   if (error instanceof AliasWorkersMissingError) console.error(error.missingRoutes);
 * }
 * ```
 */
export class AliasWorkersMissingError extends Error {
  /** Always `"AliasWorkersMissingError"`. */
  override name = "AliasWorkersMissingError";
  /** The alias. */
  readonly alias: string;
  /** The flow the caller tried to activate. */
  readonly flowSlug: string;
  /** The steps no live worker serves, with their queues. */
  readonly missingRoutes: readonly { readonly stepSlug: string; readonly queueName: string }[];

  /**
   * Creates the error.
   *
   * @param message The database's message.
   * @param fields The alias, the flow and the unserved routes.
   */
  constructor(message: string, fields: {
    readonly alias: string;
    readonly flowSlug: string;
    readonly missingRoutes: readonly { readonly stepSlug: string; readonly queueName: string }[];
  }) {
    super(message);
    this.alias = fields.alias;
    this.flowSlug = fields.flowSlug;
    this.missingRoutes = Object.freeze([...fields.missingRoutes]);
  }
}
