/**
 * Errors the client throws for conditions callers handle: a run that failed or was cancelled, a
 * wait that timed out, a start over a limit or of an unknown flow, a run that cannot be cancelled
 * or retried. The compile and alias errors are in src/deploy/errors.ts.
 *
 * @module
 */

/**
 * Thrown by `waitForRun()` when the run failed.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, RunFailedError, waitForRun } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * try {
 *   await waitForRun(sql, "6f1c0c2e-8f5e-4a43-9d43-2f7f6a0f0d11", { timeoutMs: 10_000 });
 * } catch (error) {
 *   if (error instanceof RunFailedError) console.error(error.stepSlug, error.errorMessage);
 * }
 * ```
 */
export class RunFailedError extends Error {
  /** Always `"RunFailedError"`. */
  override name = "RunFailedError";
  /** The run id. */
  readonly runId: string;
  /** The concrete flow slug of the run. */
  readonly flowSlug: string;
  /** The step that failed the run, when known. */
  readonly stepSlug: string | null;
  /** The run's error message as stored in the database. */
  readonly errorMessage: string;

  /**
   * Creates the error from the failed run.
   *
   * @param details The run, its flow, the failing step and the stored error message.
   */
  constructor(
    details: { runId: string; flowSlug: string; stepSlug: string | null; errorMessage: string },
  ) {
    super(
      `Run ${details.runId} of flow ${JSON.stringify(details.flowSlug)} failed${
        details.stepSlug === null ? "" : ` at step ${JSON.stringify(details.stepSlug)}`
      }: ${details.errorMessage}`,
    );
    this.runId = details.runId;
    this.flowSlug = details.flowSlug;
    this.stepSlug = details.stepSlug;
    this.errorMessage = details.errorMessage;
  }
}

/**
 * Thrown by `waitForRun()` when the run did not finish within the timeout. The run goes on.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, RunTimeoutError, waitForRun } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * try {
 *   await waitForRun(sql, "6f1c0c2e-8f5e-4a43-9d43-2f7f6a0f0d11", { timeoutMs: 1000 });
 * } catch (error) {
 *   if (error instanceof RunTimeoutError) console.error(error.runId, error.status);
 * }
 * ```
 */
export class RunTimeoutError extends Error {
  /** Always `"RunTimeoutError"`. */
  override name = "RunTimeoutError";
  /** The run id. */
  readonly runId: string;
  /** How long the caller waited, in milliseconds. */
  readonly timeoutMs: number;
  /** The run's status when the wait ended. */
  readonly status: string;

  /**
   * Creates the error for a wait that timed out.
   *
   * @param runId The run id.
   * @param timeoutMs The timeout that passed.
   * @param status The run's last seen status.
   */
  constructor(runId: string, timeoutMs: number, status: string) {
    super(
      `Cannot wait for run ${runId}: it did not finish within ${timeoutMs} ms (status ${
        JSON.stringify(status)
      }); the run goes on`,
    );
    this.runId = runId;
    this.timeoutMs = timeoutMs;
    this.status = status;
  }
}

/**
 * Thrown when the database refuses a value over one of the flow's size limits (SQLSTATE `SLL01`,
 * docs/sql.md#limits): a run input over `max_input_bytes`, a step output over `max_output_bytes`
 * or a map over `max_map_tasks` elements. Nothing was written.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, LimitExceededError, startFlow } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * try {
 *   await startFlow(sql, "orders", { lines: [] });
 * } catch (error) {
 *   if (error instanceof LimitExceededError) console.error(error.limit, error.size, error.max);
 * }
 * ```
 */
export class LimitExceededError extends Error {
  /** Always `"LimitExceededError"`. */
  override name = "LimitExceededError";
  /** The limit: `max_input_bytes`, `max_output_bytes` or `max_map_tasks`. */
  readonly limit: string;
  /** The refused value's size: bytes of JSON, or elements of a map. */
  readonly size: number;
  /** The limit's value. */
  readonly max: number;

  /**
   * Creates the error.
   *
   * @param message The database's message.
   * @param fields The limit, the size and the limit's value.
   */
  constructor(
    message: string,
    fields: { readonly limit: string; readonly size: number; readonly max: number },
  ) {
    super(message);
    this.limit = fields.limit;
    this.size = fields.size;
    this.max = fields.max;
  }
}

/**
 * Thrown by `startFlow()` when no flow or alias has the name it was given. Nothing was written.
 * A flow exists in the database once a worker for it has started and compiled it, so this is
 * what a producer meets when it starts a run before any worker of the flow ever ran.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, FlowNotFoundError, startFlow } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * try {
 *   await startFlow(sql, "refund_order", { orderId: 7 });
 * } catch (error) {
 *   if (error instanceof FlowNotFoundError) console.error(error.flowRef);
 * }
 * ```
 */
export class FlowNotFoundError extends Error {
  /** Always `"FlowNotFoundError"`. */
  override name = "FlowNotFoundError";
  /** The name the run was started by: a concrete slug, or an alias. */
  readonly flowRef: string;
  /** Whether the name was looked up as an alias first (a deployed flow or a plain string). */
  readonly viaAlias: boolean;

  /**
   * Creates the error; the message says what to do.
   *
   * @param flowRef The name the run was started by.
   * @param viaAlias Whether it was looked up as an alias first.
   * @param options The database error, as `cause`.
   */
  constructor(flowRef: string, viaAlias: boolean, options?: ErrorOptions) {
    super(
      `Cannot start flow ${JSON.stringify(flowRef)}: ${
        viaAlias ? "no flow or alias has that name" : "no such flow"
      }; a flow exists once a worker for it has started and compiled it, so start one first ` +
        "(`sluice dev` locally, or deploy its worker functions) and start runs after that",
      options,
    );
    this.flowRef = flowRef;
    this.viaAlias = viaAlias;
  }
}

/**
 * Thrown by `waitForRun()` when the run was cancelled (`cancelRun`).
 *
 * @example Usage
 * ```ts ignore
 * import { connect, RunCancelledError, waitForRun } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * try {
 *   await waitForRun(sql, "6f1c0c2e-8f5e-4a43-9d43-2f7f6a0f0d11", { timeoutMs: 10_000 });
 * } catch (error) {
 *   if (error instanceof RunCancelledError) console.error(error.reason);
 * }
 * ```
 */
export class RunCancelledError extends Error {
  /** Always `"RunCancelledError"`. */
  override name = "RunCancelledError";
  /** The run id. */
  readonly runId: string;
  /** The concrete flow slug of the run. */
  readonly flowSlug: string;
  /** The reason given to the cancel (`null`: none). */
  readonly reason: string | null;

  /**
   * Creates the error from the cancelled run.
   *
   * @param details The run, its flow and the cancel's reason.
   */
  constructor(details: { runId: string; flowSlug: string; reason: string | null }) {
    super(
      `Run ${details.runId} of flow ${JSON.stringify(details.flowSlug)} was cancelled${
        details.reason === null ? "" : `: ${details.reason}`
      }`,
    );
    this.runId = details.runId;
    this.flowSlug = details.flowSlug;
    this.reason = details.reason;
  }
}

/**
 * Thrown by `cancelRun()` and `retryRun()` when no run has the id: it never existed, or it was
 * deleted with its flow (`delete_flow_and_data`, `flows reset`) or by `prune`.
 *
 * @example Usage
 * ```ts ignore
 * import { cancelRun, connect, RunNotFoundError } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * try {
 *   await cancelRun(sql, "6f1c0c2e-8f5e-4a43-9d43-2f7f6a0f0d11", { reason: "duplicate order" });
 * } catch (error) {
 *   if (error instanceof RunNotFoundError) console.error(error.runId);
 * }
 * ```
 */
export class RunNotFoundError extends Error {
  /** Always `"RunNotFoundError"`. */
  override name = "RunNotFoundError";
  /** The run id asked for. */
  readonly runId: string;

  /**
   * Creates the error.
   *
   * @param action What could not be done, e.g. `Cannot retry run <id>`.
   * @param runId The run id asked for.
   * @param options The database error, as `cause`.
   */
  constructor(action: string, runId: string, options?: ErrorOptions) {
    super(
      `${action}: no such run (a run is deleted with its flow, by delete_flow_and_data or ` +
        "`sluice flows reset`, and by `sluice prune` once finished)",
      options,
    );
    this.runId = runId;
  }
}

/**
 * Thrown by `retryRun()` (without `force`) when a step the retry would start again has no live
 * worker of the run's concrete flow: its tasks would wait in the queue. Nothing changed. Start
 * the flow's workers, or retry with `force` to queue the work for them.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, retryRun, RunWorkersMissingError } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * try {
 *   await retryRun(sql, "6f1c0c2e-8f5e-4a43-9d43-2f7f6a0f0d11");
 * } catch (error) {
 *   if (error instanceof RunWorkersMissingError) console.error(error.missingRoutes);
 * }
 * ```
 */
export class RunWorkersMissingError extends Error {
  /** Always `"RunWorkersMissingError"`. */
  override name = "RunWorkersMissingError";
  /** The run. */
  readonly runId: string;
  /** The steps no live worker of the run's flow serves, with their queues. */
  readonly missingRoutes: readonly { readonly stepSlug: string; readonly queueName: string }[];

  /**
   * Creates the error.
   *
   * @param message The database's message.
   * @param fields The run and the unserved routes.
   */
  constructor(message: string, fields: {
    readonly runId: string;
    readonly missingRoutes: readonly { readonly stepSlug: string; readonly queueName: string }[];
  }) {
    super(message);
    this.runId = fields.runId;
    this.missingRoutes = Object.freeze([...fields.missingRoutes]);
  }
}

/**
 * Thrown by `sendSignal()` when the signal id was sent before with another key (SQLSTATE
 * `SLS01`): a signal id names one signal. Nothing was written.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, sendSignal, SignalIdConflictError } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * try {
 *   await sendSignal(sql, { key: "refund:r_43", payload: true, signalId: "decision-r_42" });
 * } catch (error) {
 *   if (error instanceof SignalIdConflictError) console.error(error.existingKey);
 * }
 * ```
 */
export class SignalIdConflictError extends Error {
  /** Always `"SignalIdConflictError"`. */
  override name = "SignalIdConflictError";
  /** The signal id given. */
  readonly signalId: string;
  /** The key given. */
  readonly key: string;
  /** The key the signal id was sent with before. */
  readonly existingKey: string;

  /**
   * Creates the error; the message says what to do.
   *
   * @param fields The signal id, the key given and the key it was sent with.
   * @param options The database error, as `cause`.
   */
  constructor(
    fields: { readonly signalId: string; readonly key: string; readonly existingKey: string },
    options?: ErrorOptions,
  ) {
    super(
      `Cannot send signal ${JSON.stringify(fields.signalId)} with key ${
        JSON.stringify(fields.key)
      }: that signal id was sent with key ${JSON.stringify(fields.existingKey)}; ` +
        "a signal id names one signal, so use a new id for another key (include the key in it)",
      options,
    );
    this.signalId = fields.signalId;
    this.key = fields.key;
    this.existingKey = fields.existingKey;
  }
}

/**
 * Thrown when the database refuses another flow's things to a role granted only some flows
 * (SQLSTATE `SLA01`, docs/privileges.md#per-flow-access): starting, cancelling, retrying, compiling
 * or deleting a flow outside its grant. Nothing was written.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, FlowAccessError, startFlow } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("TEAM_SHIPPING_DATABASE_URL")!);
 * try {
 *   await startFlow(sql, "billing_invoices", {});
 * } catch (error) {
 *   if (error instanceof FlowAccessError) console.error(error.role, error.flow);
 * }
 * ```
 */
export class FlowAccessError extends Error {
  /** Always `"FlowAccessError"`. */
  override name = "FlowAccessError";
  /** The role that was refused. */
  readonly role: string;
  /** The flow (slug or alias name) outside its grant. */
  readonly flow: string;
  /** What it tried, as the database names it (`cancel run …`, `start flow …`). */
  readonly action: string;

  /**
   * Creates the error.
   *
   * @param message The database's message.
   * @param fields The role, the flow and the action.
   * @param options The database error as `cause`.
   */
  constructor(
    message: string,
    fields: { readonly role: string; readonly flow: string; readonly action: string },
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.role = fields.role;
    this.flow = fields.flow;
    this.action = fields.action;
  }
}
