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

/** A step of a run in flight that waits on a signal (`waitKey`) or a sleep (`waitKey` null). */
export interface WaitingStep {
  /** The run. */
  readonly runId: string;
  /** The waiting step. */
  readonly stepSlug: string;
  /** The signal key it waits for; null for a sleep. */
  readonly waitKey: string | null;
  /** When the wait times out (a signal) or ends (a sleep); null when it never does. */
  readonly waitUntil: string | null;
}

/**
 * Thrown by `compileFlow()` (and so by `startWorker()` and `sluice dev`) in development when the
 * flow's shape changed but runs of the flow are still in flight: a recompile deletes every run of
 * the flow, so it refuses rather than drop them silently. Nothing was changed; the old workers
 * keep serving the runs. Let them finish, cancel them, or delete them explicitly with
 * `sluice flows reset <flow> --force`, then start again.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, Flow, RecompileInFlightError } from "@sluice/sluice";
 * import { compileFlow } from "@sluice/sluice/admin";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * const flow = new Flow({ slug: "orders" }).step({ slug: "fetch" }, () => 1);
 * try {
 *   await compileFlow(sql, flow, { environment: "development" });
 * } catch (error) {
 *   if (error instanceof RecompileInFlightError) console.error(error.inFlightRuns, error.waiting);
 * }
 * ```
 */
export class RecompileInFlightError extends Error {
  /** Always `"RecompileInFlightError"`. */
  override name = "RecompileInFlightError";
  /** The concrete flow slug. */
  readonly flowSlug: string;
  /** How many runs of the flow are started (not finished). */
  readonly inFlightRuns: number;
  /** How many steps of those runs wait on a signal or a sleep. */
  readonly waitingSteps: number;
  /** The waiting steps, oldest wait first (at most 20). */
  readonly waiting: readonly WaitingStep[];
  /** What changed in the flow's shape. */
  readonly differences: readonly string[];

  /**
   * Creates the error; the message counts the runs and names the waiting ones.
   *
   * @param flowSlug The concrete flow slug.
   * @param inFlightRuns How many runs are started.
   * @param waitingSteps How many of their steps wait.
   * @param waiting The waiting steps named (at most 20).
   * @param differences What changed in the shape.
   */
  constructor(
    flowSlug: string,
    inFlightRuns: number,
    waitingSteps: number,
    waiting: readonly WaitingStep[],
    differences: readonly string[],
  ) {
    const named = waiting.map((w) =>
      `  - run ${w.runId} step ${JSON.stringify(w.stepSlug)} ${
        w.waitKey === null
          ? `sleeping until ${w.waitUntil}`
          : `waiting for signal ${JSON.stringify(w.waitKey)}`
      }\n`
    ).join("");
    const more = waitingSteps > waiting.length
      ? `  - and ${waitingSteps - waiting.length} more waiting step(s)\n`
      : "";
    super(
      `Cannot recompile flow ${JSON.stringify(flowSlug)} in development: ${inFlightRuns} run(s) ` +
        `of it are in flight (${waitingSteps} step(s) waiting on a signal or a sleep), and a ` +
        `recompile deletes every run of the flow. Nothing was changed.\n${named}${more}` +
        `Let them finish, cancel them (\`sluice runs cancel --flow ${flowSlug} --reason TEXT\`), ` +
        `or delete them with \`sluice flows reset ${flowSlug} --force\`, then start again.`,
    );
    this.flowSlug = flowSlug;
    this.inFlightRuns = inFlightRuns;
    this.waitingSteps = waitingSteps;
    this.waiting = Object.freeze([...waiting]);
    this.differences = Object.freeze([...differences]);
  }
}

/**
 * Thrown by `startFlow()`, `compileFlow()`, `startWorker()` and `sluice dev` when the database has
 * no sluice schema: its migrations were never applied. The message names the fix in one line.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, SluiceNotInstalledError, startFlow } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * try {
 *   await startFlow(sql, "refund_order", { orderId: 7 });
 * } catch (error) {
 *   if (error instanceof SluiceNotInstalledError) console.error(error.message);
 * }
 * ```
 */
export class SluiceNotInstalledError extends Error {
  /** Always `"SluiceNotInstalledError"`. */
  override name = "SluiceNotInstalledError";
  /** What was refused, e.g. `Cannot start flow "orders"`. */
  readonly action: string;

  /**
   * Creates the error; the message says how to install sluice.
   *
   * @param action What was refused, e.g. `Cannot start flow "orders"`.
   * @param options The database error, as `cause`.
   */
  constructor(action: string, options?: ErrorOptions) {
    super(
      `${action}: sluice is not installed in this database (schema "sluice" does not exist); ` +
        "apply its migrations with `deno task sluice migrate` (or `supabase migration up` after " +
        "`deno task sluice install`)",
      options,
    );
    this.action = action;
  }
}
