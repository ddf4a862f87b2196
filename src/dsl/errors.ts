/**
 * Errors the DSL throws synchronously, before any database access.
 *
 * @module
 */

/**
 * Why a flow definition was rejected:
 *
 * - `invalid_slug`: a flow or step slug breaks the slug rules.
 * - `reserved_slug`: a step is named `run`.
 * - `duplicate_step`: a step slug is already taken (compared case-insensitively).
 * - `unknown_dependency`: `dependsOn` or `array` names a step that does not exist (yet).
 * - `duplicate_dependency`: `dependsOn` names a step twice.
 * - `invalid_map_source`: a map's `array` is not its only dependency, or a root map has
 *   dependencies.
 * - `invalid_option`: an option has a value of the wrong type or range.
 * - `unknown_option`: an option key that does not exist (there is no queue option on steps).
 * - `empty_flow`: a flow without steps cannot be deployed (thrown by `extractDefinition()`).
 *
 * @example Usage
 * ```ts
 * import type { FlowDefinitionErrorReason } from "@sluice/sluice";
 *
 * const reason: FlowDefinitionErrorReason = "unknown_dependency";
 * ```
 */
export type FlowDefinitionErrorReason =
  | "invalid_slug"
  | "reserved_slug"
  | "duplicate_step"
  | "unknown_dependency"
  | "duplicate_dependency"
  | "invalid_map_source"
  | "invalid_option"
  | "unknown_option"
  | "empty_flow";

/**
 * The fields of a {@linkcode FlowDefinitionError}.
 *
 * @example Usage
 * ```ts
 * import type { FlowDefinitionErrorDetails } from "@sluice/sluice";
 *
 * const details: FlowDefinitionErrorDetails = {
 *   flowSlug: "orders",
 *   stepSlug: "ship",
 *   reason: "unknown_dependency",
 *   option: "dependsOn",
 *   value: "pay",
 * };
 * ```
 */
export interface FlowDefinitionErrorDetails {
  /** The flow slug (as given, even when it is the invalid value). */
  readonly flowSlug: string;
  /** The step being added, `undefined` for a flow-level problem. */
  readonly stepSlug: string | undefined;
  /** Why the definition was rejected. */
  readonly reason: FlowDefinitionErrorReason;
  /** The option that holds the offending value, e.g. `"dependsOn"` or `"maxAttempts"`. */
  readonly option: string;
  /** The offending value. */
  readonly value: unknown;
}

/**
 * Thrown by `new Flow()`, `.step()`, `.array()` and `.map()` when the definition breaks a rule,
 * and by `extractDefinition()` for a flow without steps. Nothing has been sent to the database at
 * that point.
 *
 * @example Usage
 * ```ts
 * import { Flow, FlowDefinitionError } from "@sluice/sluice";
 *
 * try {
 *   new Flow({ slug: "orders" }).step({ slug: "run" }, () => 1);
 * } catch (error) {
 *   if (error instanceof FlowDefinitionError) console.error(error.reason, error.value);
 * }
 * ```
 */
export class FlowDefinitionError extends Error implements FlowDefinitionErrorDetails {
  /** The error name. */
  override name = "FlowDefinitionError";
  /** The flow slug (as given, even when it is the invalid value). */
  readonly flowSlug: string;
  /** The step being added, `undefined` for a flow-level problem. */
  readonly stepSlug: string | undefined;
  /** Why the definition was rejected. */
  readonly reason: FlowDefinitionErrorReason;
  /** The option that holds the offending value. */
  readonly option: string;
  /** The offending value. */
  readonly value: unknown;

  /**
   * Creates the error.
   *
   * @param message The error message.
   * @param details The offending flow, step, option and value.
   */
  constructor(message: string, details: FlowDefinitionErrorDetails) {
    super(message);
    this.flowSlug = details.flowSlug;
    this.stepSlug = details.stepSlug;
    this.reason = details.reason;
    this.option = details.option;
    this.value = details.value;
  }
}

/**
 * Why generated queue names were rejected:
 *
 * - `empty_flow`: a flow without steps gets no step queues.
 * - `flow_slug_too_long`: even the shortest possible name for this flow is too long.
 * - `name_too_long`: a step's readable name and its index fallback both exceed the limit.
 * - `collision`: two steps resolve to one queue.
 * - `invalid_name`: a derived name holds something other than ASCII lowercase letters, digits
 *   and underscores (e.g. a non-ASCII letter of an unchecked slug).
 *
 * @example Usage
 * ```ts
 * import type { QueueNameErrorReason } from "@sluice/sluice";
 *
 * const reason: QueueNameErrorReason = "name_too_long";
 * ```
 */
export type QueueNameErrorReason =
  | "empty_flow"
  | "flow_slug_too_long"
  | "name_too_long"
  | "collision"
  | "invalid_name";

/**
 * A queue name that was considered, with its length.
 *
 * @example Usage
 * ```ts
 * import type { QueueNameCandidate } from "@sluice/sluice";
 *
 * const candidate: QueueNameCandidate = { name: "orders__fetch", length: 13 };
 * ```
 */
export interface QueueNameCandidate {
  /** The lowercase queue name. */
  readonly name: string;
  /** Its length in UTF-8 bytes (characters, for a name that obeys the rule). */
  readonly length: number;
}

/**
 * The fields of a {@linkcode QueueNameError}.
 *
 * @example Usage
 * ```ts
 * import type { QueueNameErrorDetails } from "@sluice/sluice";
 *
 * const details: QueueNameErrorDetails = {
 *   flowSlug: "orders",
 *   reason: "empty_flow",
 *   stepSlugs: [],
 *   candidates: [],
 *   maxLength: 47,
 * };
 * ```
 */
export interface QueueNameErrorDetails {
  /** The flow whose queue names were derived. */
  readonly flowSlug: string;
  /** Why the names were rejected. */
  readonly reason: QueueNameErrorReason;
  /** The steps involved: none, one, or the two that collide. */
  readonly stepSlugs: readonly string[];
  /** The names considered and their lengths. */
  readonly candidates: readonly QueueNameCandidate[];
  /** The maximum queue name length. */
  readonly maxLength: number;
}

/**
 * Thrown when a flow's generated queue names break the naming contract (at most 47 characters,
 * one queue per step). Nothing has been sent to the database at that point.
 *
 * @example Usage
 * ```ts
 * import { Flow, QueueNameError, withStepQueues } from "@sluice/sluice";
 *
 * try {
 *   withStepQueues(new Flow({ slug: "empty" }));
 * } catch (error) {
 *   if (error instanceof QueueNameError) console.error(error.reason, error.candidates);
 * }
 * ```
 */
export class QueueNameError extends Error implements QueueNameErrorDetails {
  /** The error name. */
  override name = "QueueNameError";
  /** The flow whose queue names were derived. */
  readonly flowSlug: string;
  /** Why the names were rejected. */
  readonly reason: QueueNameErrorReason;
  /** The steps involved: none, one, or the two that collide. */
  readonly stepSlugs: readonly string[];
  /** The names considered and their lengths. */
  readonly candidates: readonly QueueNameCandidate[];
  /** The maximum queue name length. */
  readonly maxLength: number;

  /**
   * Creates the error.
   *
   * @param message The error message.
   * @param details The flow, steps and names involved.
   */
  constructor(message: string, details: QueueNameErrorDetails) {
    super(message);
    this.flowSlug = details.flowSlug;
    this.reason = details.reason;
    this.stepSlugs = details.stepSlugs;
    this.candidates = details.candidates;
    this.maxLength = details.maxLength;
  }
}

/**
 * Thrown when a value that must be stored as JSON (a run input, a step output) holds something
 * that does not survive a JSON round trip unchanged, or that Postgres cannot store in `jsonb`.
 * `path` says where: `input.lines[2].price`. Nothing was written.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, JsonValueError, startFlow } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * try {
 *   await startFlow(sql, "orders", { total: Number.NaN });
 * } catch (error) {
 *   if (error instanceof JsonValueError) console.error(error.path); // "input.total"
 * }
 * ```
 */
export class JsonValueError extends TypeError {
  /** Always `"JsonValueError"`. */
  override name = "JsonValueError";
  /** Where the offending value sits, e.g. `input.lines[2].price`. */
  readonly path: string;
  /** What is wrong there, e.g. `NaN is not JSON`. */
  readonly detail: string;

  /**
   * Creates the error; the message reads `<action>: <path>: <detail>`.
   *
   * @param action What could not be done, e.g. `Cannot start flow "orders"`.
   * @param path Where the offending value sits.
   * @param detail What is wrong there.
   */
  constructor(action: string, path: string, detail: string) {
    super(`${action}: ${path}: ${detail}`);
    this.path = path;
    this.detail = detail;
  }
}

/**
 * Thrown when a value to be stored as JSON (a run input, a step output) is larger than the
 * configured limit (`maxInputBytes` of `startFlow`, `maxOutputBytes` of a worker; 16 MiB by
 * default). Nothing was written.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, JsonSizeError, startFlow } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * try {
 *   await startFlow(sql, "orders", { blob: "x".repeat(20_000_000) });
 * } catch (error) {
 *   if (error instanceof JsonSizeError) console.error(error.bytes, error.maxBytes);
 * }
 * ```
 */
export class JsonSizeError extends RangeError {
  /** Always `"JsonSizeError"`. */
  override name = "JsonSizeError";
  /** What was too large, e.g. `input`. */
  readonly path: string;
  /** The size of its JSON text in UTF-8 bytes. */
  readonly bytes: number;
  /** The limit. */
  readonly maxBytes: number;

  /**
   * Creates the error.
   *
   * @param action What could not be done, e.g. `Cannot start flow "orders"`.
   * @param path What was too large.
   * @param bytes Its size as JSON text, in UTF-8 bytes.
   * @param maxBytes The limit.
   */
  constructor(action: string, path: string, bytes: number, maxBytes: number) {
    super(
      `${action}: ${path} is ${bytes} bytes as JSON, more than the limit of ${maxBytes} bytes`,
    );
    this.path = path;
    this.bytes = bytes;
    this.maxBytes = maxBytes;
  }
}

/** One issue of an {@linkcode InputValidationError}: where, and what is wrong there. */
export interface InputIssue {
  /** Where, from the input: `input`, `input.lines[2].price`, `input["unit price"]`. */
  readonly path: string;
  /** The validator's message, e.g. `Expected number`. */
  readonly message: string;
}

/**
 * Thrown when a run input does not match the flow's input schema (`new Flow({ slug, input })`, a
 * Standard Schema validator such as zod, valibot or arktype): by `startFlow` before anything is
 * written, and by a worker before a root step's handler runs (that attempt fails with its
 * message). `issues` lists each problem with its path.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, InputValidationError, startFlow } from "@sluice/sluice";
 * import { orders } from "./flows.ts";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * try {
 *   await startFlow(sql, orders, JSON.parse(body));
 * } catch (error) {
 *   if (error instanceof InputValidationError) console.error(error.issues);
 * }
 * ```
 */
export class InputValidationError extends TypeError {
  /** Always `"InputValidationError"`. */
  override name = "InputValidationError";
  /** The concrete flow slug whose schema refused the input. */
  readonly flowSlug: string;
  /** Each problem: its path and message. */
  readonly issues: readonly InputIssue[];

  /**
   * Creates the error; the message reads `<action>: the input does not match the flow's input
   * schema: <path>: <message>; ...`.
   *
   * @param action What could not be done, e.g. `Cannot start flow "orders"`.
   * @param flowSlug The flow whose schema refused the input.
   * @param issues The problems found.
   */
  constructor(action: string, flowSlug: string, issues: readonly InputIssue[]) {
    super(
      `${action}: the input does not match the flow's input schema: ${
        issues.map((issue) => `${issue.path}: ${issue.message}`).join("; ")
      }`,
    );
    this.flowSlug = flowSlug;
    this.issues = issues;
  }
}
