// Runtime validation of flow and step options. Runs synchronously inside the builders, so a
// definition that breaks a rule never reaches the database.

import { isStandardSchema, type StandardSchemaV1 } from "./standard_schema.ts";
import type { WhenPolicy } from "./condition.ts";
import type { ConcurrencyLimit, RateLimit } from "./concurrency.ts";
import { FlowDefinitionError, type FlowDefinitionErrorReason } from "./errors.ts";
import type { JsonObject } from "./json.ts";
import type { FlowLimitOptions } from "./limits.ts";
import { findJsonProblem } from "./json_text.ts";
import { RESERVED_STEP_SLUGS, slugProblem } from "./slug.ts";
import type {
  FlowEventOptions,
  FlowRuntimeOptions,
  OnTimeout,
  SleepDue,
  StepDefinition,
  StepHandler,
  StepRuntimeOptions,
} from "./step_definition.ts";

/** The largest value a numeric option may take: Postgres `integer`. */
const MAX_OPTION_VALUE = 2_147_483_647;

/**
 * The longest task timeout in seconds (about 24.8 days): a worker arms one timer of
 * `timeout * 1000` ms per task, and a timer longer than 2^31 - 1 ms fires at once. The SQL
 * compiler refuses the same bound (sluice.check_timeout).
 */
export const MAX_TIMEOUT_SECONDS = 2_147_483;

const WHEN_POLICIES: readonly WhenPolicy[] = ["fail", "skip", "skip-cascade"];

const FLOW_KEYS = [
  "slug",
  "input",
  "maxAttempts",
  "baseDelay",
  "timeout",
  "events",
  "progressInterval",
  "maxInputBytes",
  "maxOutputBytes",
  "maxMapTasks",
] as const;
const RUNTIME_KEYS = ["maxAttempts", "baseDelay", "timeout", "startDelay"] as const;
const STEP_KEYS = [
  "slug",
  "dependsOn",
  ...RUNTIME_KEYS,
  "concurrency",
  "rateLimit",
  "if",
  "ifNot",
  "whenUnmet",
  "whenExhausted",
] as const;
const MAP_KEYS = [...STEP_KEYS, "array"] as const;

/** Which builder added the step. */
export type StepKind = "step" | "array" | "map";

/** Renders a value for an error message: JSON where it is faithful, a description otherwise. */
export function formatValue(value: unknown): string {
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "function":
      return "a function";
    case "bigint":
      return `${value}n`;
    case "object": {
      if (value === null) return "null";
      if (!Array.isArray(value) && !isPlainObject(value)) {
        const name: unknown = value.constructor?.name;
        return typeof name === "string" && name !== "" ? `an instance of ${name}` : "an object";
      }
      try {
        return JSON.stringify(value);
      } catch {
        return Array.isArray(value) ? "an array" : "an object";
      }
    }
    default:
      return String(value);
  }
}

/** Describes why option `key` is not a plain JSON object, or returns `undefined` when it is one. */
function jsonObjectProblem(key: string, value: unknown): string | undefined {
  if (!isPlainObject(value)) return `${key} must be a plain JSON object, got ${formatValue(value)}`;
  const problem = findJsonProblem(value, key);
  return problem === undefined ? undefined : `${problem.path}: ${problem.detail}`;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}

/** Builds the errors of one builder call, all sharing its flow and step slug. */
class Rejecter {
  readonly #flowSlug: string;
  readonly #stepSlug: string | undefined;

  constructor(flowSlug: string, stepSlug: string | undefined) {
    this.#flowSlug = flowSlug;
    this.#stepSlug = stepSlug;
  }

  reject(
    reason: FlowDefinitionErrorReason,
    option: string,
    value: unknown,
    detail: string,
  ): FlowDefinitionError {
    const action = this.#stepSlug === undefined
      ? `Cannot create flow ${JSON.stringify(this.#flowSlug)}`
      : `Cannot add step ${JSON.stringify(this.#stepSlug)} to flow ${
        JSON.stringify(this.#flowSlug)
      }`;
    return new FlowDefinitionError(`${action}: ${detail}`, {
      flowSlug: this.#flowSlug,
      stepSlug: this.#stepSlug,
      reason,
      option,
      value,
    });
  }

  checkKeys(options: Record<string, unknown>, allowed: readonly string[]): void {
    for (const key of Object.keys(options)) {
      if (!allowed.includes(key)) {
        throw this.reject(
          "unknown_option",
          key,
          options[key],
          `unknown option ${JSON.stringify(key)} (valid options: ${allowed.join(", ")})`,
        );
      }
    }
  }

  checkSlug(slug: string): void {
    const problem = slugProblem(slug);
    if (problem !== undefined) throw this.reject("invalid_slug", "slug", slug, problem);
  }

  integer(
    options: Record<string, unknown>,
    key: string,
    min: number,
    max = MAX_OPTION_VALUE,
  ): number | undefined {
    const value = options[key];
    if (value === undefined) return undefined;
    if (
      typeof value !== "number" || !Number.isInteger(value) || value < min || value > max
    ) {
      throw this.reject(
        "invalid_option",
        key,
        value,
        `${key} must be an integer from ${min} to ${max}${
          max === MAX_TIMEOUT_SECONDS ? " (seconds, about 24.8 days: the longest worker timer)" : ""
        }, got ${formatValue(value)}`,
      );
    }
    return value;
  }

  policy(options: Record<string, unknown>, key: string, fallback: WhenPolicy): WhenPolicy {
    const value = options[key];
    if (value === undefined) return fallback;
    if (!WHEN_POLICIES.includes(value as WhenPolicy)) {
      throw this.reject(
        "invalid_option",
        key,
        value,
        `${key} must be "fail", "skip" or "skip-cascade", got ${formatValue(value)}`,
      );
    }
    return value as WhenPolicy;
  }

  pattern(options: Record<string, unknown>, key: string): JsonObject | null {
    const value = options[key];
    if (value === undefined) return null;
    const problem = jsonObjectProblem(key, value);
    if (problem !== undefined) throw this.reject("invalid_option", key, value, problem);
    return deepFreeze(structuredClone(value) as JsonObject);
  }

  runtimeOptions(
    options: Record<string, unknown>,
    keys: readonly NumericRuntimeKey[],
  ): StepRuntimeOptions {
    const result: { -readonly [K in NumericRuntimeKey]?: number } = {};
    for (const key of keys) {
      const value = this.integer(
        options,
        key,
        key === "startDelay" ? 0 : 1,
        key === "timeout" ? MAX_TIMEOUT_SECONDS : MAX_OPTION_VALUE,
      );
      if (value !== undefined) result[key] = value;
    }
    return Object.freeze(result);
  }

  concurrency(options: Record<string, unknown>): ConcurrencyLimit | undefined {
    const value = options.concurrency;
    if (value === undefined) return undefined;
    const shape = "concurrency must be an object { limit, key? }: limit an integer from 1 to " +
      `${MAX_OPTION_VALUE}, key a dotted path into the run input`;
    if (!isPlainObject(value)) {
      throw this.reject(
        "invalid_option",
        "concurrency",
        value,
        `${shape}, got ${formatValue(value)}`,
      );
    }
    const unknown = Object.keys(value).find((key) => key !== "limit" && key !== "key");
    const { limit, key } = value;
    if (
      unknown !== undefined || typeof limit !== "number" || !Number.isInteger(limit) ||
      limit < 1 || limit > MAX_OPTION_VALUE ||
      (key !== undefined && (typeof key !== "string" || key.split(".").includes("")))
    ) {
      throw this.reject(
        "invalid_option",
        "concurrency",
        value,
        `${shape}, got ${formatValue(value)}`,
      );
    }
    return Object.freeze(key === undefined ? { limit } : { limit, key: key as string });
  }

  rateLimit(
    options: Record<string, unknown>,
    concurrency: ConcurrencyLimit | undefined,
  ): RateLimit | undefined {
    const value = options.rateLimit;
    if (value === undefined) return undefined;
    const shape =
      "rateLimit must be an object { limit, period, key? }: limit and period (seconds) " +
      `integers from 1 to ${MAX_OPTION_VALUE}, key a dotted path into the run input`;
    if (!isPlainObject(value)) {
      throw this.reject(
        "invalid_option",
        "rateLimit",
        value,
        `${shape}, got ${formatValue(value)}`,
      );
    }
    const unknown = Object.keys(value).find((key) => !["limit", "period", "key"].includes(key));
    const { limit, period, key } = value;
    const whole = (n: unknown) =>
      typeof n === "number" && Number.isInteger(n) && n >= 1 && n <= MAX_OPTION_VALUE;
    if (
      unknown !== undefined || !whole(limit) || !whole(period) ||
      (key !== undefined && (typeof key !== "string" || key.split(".").includes("")))
    ) {
      throw this.reject(
        "invalid_option",
        "rateLimit",
        value,
        `${shape}, got ${formatValue(value)}`,
      );
    }
    if (concurrency !== undefined && concurrency.key !== key) {
      throw this.reject(
        "invalid_option",
        "rateLimit",
        value,
        "concurrency and rateLimit of a step count under one key: give both the same key, got " +
          `${formatValue(concurrency.key)} and ${formatValue(key)}`,
      );
    }
    const base = { limit: limit as number, period: period as number };
    return Object.freeze(key === undefined ? base : { ...base, key: key as string });
  }
}

type NumericRuntimeKey = Exclude<keyof StepRuntimeOptions, "concurrency" | "rateLimit">;

function withLimits(rejecter: Rejecter, options: Record<string, unknown>): StepRuntimeOptions {
  const runtime = rejecter.runtimeOptions(options, RUNTIME_KEYS);
  const concurrency = rejecter.concurrency(options);
  const rateLimit = rejecter.rateLimit(options, concurrency);
  if (concurrency === undefined && rateLimit === undefined) return runtime;
  return Object.freeze({
    ...runtime,
    ...(concurrency === undefined ? {} : { concurrency }),
    ...(rateLimit === undefined ? {} : { rateLimit }),
  });
}

function requireObject(value: unknown, action: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new TypeError(`${action}: options must be an object, got ${formatValue(value)}`);
  }
  return value as Record<string, unknown>;
}

function requireSlug(options: Record<string, unknown>, action: string): string {
  const slug = options.slug;
  if (typeof slug !== "string") {
    throw new TypeError(`${action}: slug must be a string, got ${formatValue(slug)}`);
  }
  return slug;
}

/** The validated constructor options of a flow. */
export interface ValidFlowOptions {
  readonly slug: string;
  readonly options: FlowRuntimeOptions & FlowEventOptions & FlowLimitOptions;
  /** The input schema; not an option of the flow's shape. */
  readonly inputSchema: StandardSchemaV1 | undefined;
}

/** Validates the options of `new Flow()`. */
export function validateFlowOptions(input: unknown): ValidFlowOptions {
  const options = requireObject(input, "Cannot create flow");
  const slug = requireSlug(options, "Cannot create flow");
  const rejecter = new Rejecter(slug, undefined);
  rejecter.checkKeys(options, FLOW_KEYS);
  rejecter.checkSlug(slug);
  const events = options.events;
  if (events !== undefined && typeof events !== "boolean") {
    throw rejecter.reject(
      "invalid_option",
      "events",
      events,
      `events must be true or false, got ${formatValue(events)}`,
    );
  }
  const inputSchema = options.input;
  if (inputSchema !== undefined && !isStandardSchema(inputSchema)) {
    throw rejecter.reject(
      "invalid_option",
      "input",
      inputSchema,
      `input must be a Standard Schema validator (an object whose "~standard" property has ` +
        `version 1 and a validate function, as zod, valibot and arktype schemas have), got ${
          formatValue(inputSchema)
        }`,
    );
  }
  const progressInterval = rejecter.integer(options, "progressInterval", 0);
  const limits: Record<string, number> = {};
  for (const key of ["maxInputBytes", "maxOutputBytes", "maxMapTasks"] as const) {
    const value = rejecter.integer(options, key, 1);
    if (value !== undefined) limits[key] = value;
  }
  return Object.freeze({
    slug,
    options: Object.freeze({
      ...rejecter.runtimeOptions(options, ["maxAttempts", "baseDelay", "timeout"]),
      ...(events === undefined ? {} : { events }),
      ...(progressInterval === undefined ? {} : { progressInterval }),
      ...limits,
    }),
    inputSchema,
  });
}

/** Validates one `.step()`, `.array()` or `.map()` call against the steps added so far. */
export function validateStep(
  flowSlug: string,
  steps: readonly StepDefinition[],
  kind: StepKind,
  input: unknown,
  handler: unknown,
): StepDefinition {
  const head = `Cannot add step to flow ${JSON.stringify(flowSlug)}`;
  const options = requireObject(input, head);
  const slug = requireSlug(options, head);
  const rejecter = new Rejecter(flowSlug, slug);
  if (typeof handler !== "function") {
    throw new TypeError(
      `Cannot add step ${JSON.stringify(slug)} to flow ${
        JSON.stringify(flowSlug)
      }: handler must be a function, got ${formatValue(handler)}`,
    );
  }
  rejecter.checkKeys(options, kind === "map" ? MAP_KEYS : STEP_KEYS);
  rejecter.checkSlug(slug);
  if (RESERVED_STEP_SLUGS.includes(slug.toLowerCase())) {
    throw rejecter.reject(
      "reserved_slug",
      "slug",
      slug,
      `${JSON.stringify(slug.toLowerCase())} is reserved`,
    );
  }
  const taken = steps.find((step) => step.slug.toLowerCase() === slug.toLowerCase());
  if (taken !== undefined) {
    throw rejecter.reject(
      "duplicate_step",
      "slug",
      slug,
      `step ${JSON.stringify(taken.slug)} already exists (slugs are compared case-insensitively)`,
    );
  }

  const dependsOn = validateDependencies(rejecter, steps, options.dependsOn);
  const mapSource = kind === "map" ? validateMapSource(rejecter, steps, options, dependsOn) : null;
  const deps = mapSource === null ? dependsOn : [mapSource];

  return Object.freeze({
    slug,
    index: steps.length,
    type: kind === "map" ? "map" : "single",
    dependsOn: Object.freeze([...deps].sort()),
    mapSource,
    if: rejecter.pattern(options, "if"),
    ifNot: rejecter.pattern(options, "ifNot"),
    whenUnmet: rejecter.policy(options, "whenUnmet", "skip"),
    whenExhausted: rejecter.policy(options, "whenExhausted", "fail"),
    options: withLimits(rejecter, options),
    handler: handler as StepHandler,
    wait: null,
  });
}

const SLEEP_KEYS = ["slug", "dependsOn"] as const;
const SIGNAL_KEYS = [
  "slug",
  "dependsOn",
  "key",
  "payload",
  "timeoutSeconds",
  "onTimeout",
  "acceptSignalsSentBeforeRun",
] as const;

/** Validates one `.sleep()` or `.waitForSignal()` call against the steps added so far. */
export function validateWaitStep(
  flowSlug: string,
  steps: readonly StepDefinition[],
  kind: "sleep" | "signal",
  input: unknown,
  due: unknown,
): StepDefinition {
  const head = `Cannot add step to flow ${JSON.stringify(flowSlug)}`;
  const options = requireObject(input, head);
  const slug = requireSlug(options, head);
  const rejecter = new Rejecter(flowSlug, slug);
  rejecter.checkKeys(options, kind === "sleep" ? SLEEP_KEYS : SIGNAL_KEYS);
  const base = validateStep(
    flowSlug,
    steps,
    "step",
    { slug, dependsOn: options.dependsOn },
    () => undefined,
  );
  const dependency = steps.find((step) => step.slug === base.dependsOn[0]);
  if (base.dependsOn.length !== 1 || dependency === undefined || dependency.type !== "single") {
    throw rejecter.reject(
      "invalid_option",
      "dependsOn",
      options.dependsOn,
      `a wait depends on exactly one single step that runs a handler (its worker computes the wait), got dependsOn ${
        formatValue(options.dependsOn)
      }${dependency === undefined ? "" : ` (a ${dependency.type} step)`}`,
    );
  }
  const fn = kind === "sleep" ? due : options.key;
  if (typeof fn !== "function") {
    throw rejecter.reject(
      "invalid_option",
      kind === "sleep" ? "due" : "key",
      fn,
      `${kind === "sleep" ? "the due-time argument" : "key"} must be a function, got ${
        formatValue(fn)
      }`,
    );
  }
  const refuse: StepHandler = () => {
    throw new Error(
      `Step ${JSON.stringify(slug)} of flow ${JSON.stringify(flowSlug)} is a wait: it has no task`,
    );
  };
  if (kind === "sleep") {
    return Object.freeze({
      ...base,
      type: "sleep",
      handler: refuse,
      wait: Object.freeze({ kind: "sleep", due: fn as (deps: never) => SleepDue }),
    });
  }
  const timeoutSeconds = rejecter.integer(options, "timeoutSeconds", 1) ?? null;
  const onTimeout = options.onTimeout ?? "fail";
  const validOnTimeout = onTimeout === "fail" || onTimeout === "skip" ||
    (isPlainObject(onTimeout) && Object.keys(onTimeout).join() === "value" &&
      findJsonProblem(onTimeout.value, "onTimeout.value") === undefined);
  if (!validOnTimeout || (options.onTimeout !== undefined && timeoutSeconds === null)) {
    throw rejecter.reject(
      "invalid_option",
      "onTimeout",
      onTimeout,
      validOnTimeout
        ? "onTimeout needs timeoutSeconds (without it the wait has no timeout)"
        : `onTimeout must be "fail", "skip" or { value } with a JSON value, got ${
          formatValue(onTimeout)
        }`,
    );
  }
  const accept = options.acceptSignalsSentBeforeRun ?? false;
  if (typeof accept !== "boolean") {
    throw rejecter.reject(
      "invalid_option",
      "acceptSignalsSentBeforeRun",
      accept,
      `acceptSignalsSentBeforeRun must be a boolean, got ${formatValue(accept)}`,
    );
  }
  return Object.freeze({
    ...base,
    type: "signal",
    handler: refuse,
    wait: Object.freeze({
      kind: "signal",
      key: fn as (deps: never) => string,
      timeoutSeconds,
      onTimeout: deepFreeze(structuredClone(onTimeout)) as OnTimeout,
      acceptSignalsSentBeforeRun: accept,
    }),
  });
}

const SUBFLOW_KEYS = ["slug", "dependsOn", "flow", "input"] as const;

/**
 * Validates one `.subflow()` or `.mapSubflow()` call against the steps added so far. `child` is
 * what the child runs are started by (`startRefOf` of the `flow` option, resolved by the caller),
 * or the `TypeError` that resolving it threw.
 */
export function validateSubflowStep(
  flowSlug: string,
  steps: readonly StepDefinition[],
  map: boolean,
  input: unknown,
  child: { readonly ref: string; readonly concrete: boolean } | TypeError,
): StepDefinition {
  const head = `Cannot add step to flow ${JSON.stringify(flowSlug)}`;
  const options = requireObject(input, head);
  const slug = requireSlug(options, head);
  const rejecter = new Rejecter(flowSlug, slug);
  rejecter.checkKeys(options, SUBFLOW_KEYS);
  if (child instanceof TypeError) {
    throw rejecter.reject(
      "invalid_option",
      "flow",
      options.flow,
      `flow must be a Flow or a flow returned by withStepQueues() or defineDeployedFlow(), got ${
        formatValue(options.flow)
      }`,
    );
  }
  if (child.concrete && child.ref === flowSlug) {
    throw rejecter.reject(
      "invalid_option",
      "flow",
      child.ref,
      `a flow cannot start itself as a subflow (flow ${JSON.stringify(child.ref)})`,
    );
  }
  if (typeof options.input !== "function") {
    throw rejecter.reject(
      "invalid_option",
      "input",
      options.input,
      `input must be a function, got ${formatValue(options.input)}`,
    );
  }
  const wait = validateWaitStep(
    flowSlug,
    steps,
    "sleep",
    { slug, dependsOn: options.dependsOn },
    options.input,
  );
  const refuse: StepHandler = () => {
    throw new Error(
      `Step ${JSON.stringify(slug)} of flow ${
        JSON.stringify(flowSlug)
      } is a subflow: it has no task`,
    );
  };
  return Object.freeze({
    ...wait,
    type: "subflow",
    handler: refuse,
    wait: Object.freeze({
      kind: "subflow",
      flow: child.ref,
      byAlias: !child.concrete,
      map,
      input: options.input as (deps: never) => unknown,
      child: options.flow as object,
    }),
  });
}

function validateDependencies(
  rejecter: Rejecter,
  steps: readonly StepDefinition[],
  value: unknown,
): readonly string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    throw rejecter.reject(
      "invalid_option",
      "dependsOn",
      value,
      `dependsOn must be an array of step slugs, got ${formatValue(value)}`,
    );
  }
  const seen = new Set<string>();
  for (const dep of value) {
    if (typeof dep !== "string") {
      throw rejecter.reject(
        "invalid_option",
        "dependsOn",
        dep,
        `dependsOn must be an array of step slugs, got the element ${formatValue(dep)}`,
      );
    }
    if (seen.has(dep)) {
      throw rejecter.reject(
        "duplicate_dependency",
        "dependsOn",
        dep,
        `dependency ${JSON.stringify(dep)} is listed twice`,
      );
    }
    seen.add(dep);
    if (!steps.some((step) => step.slug === dep)) {
      throw rejecter.reject(
        "unknown_dependency",
        "dependsOn",
        dep,
        `unknown dependency ${
          JSON.stringify(dep)
        } (a dependency must be added before the steps that depend on it)`,
      );
    }
  }
  return value;
}

function validateMapSource(
  rejecter: Rejecter,
  steps: readonly StepDefinition[],
  options: Record<string, unknown>,
  dependsOn: readonly string[],
): string | null {
  const source = options.array;
  if (source === undefined) {
    if (dependsOn.length > 0) {
      throw rejecter.reject(
        "invalid_map_source",
        "dependsOn",
        dependsOn,
        `a map over the flow input cannot have dependencies, got dependsOn ${
          formatValue(dependsOn)
        } (set array to map over a dependency)`,
      );
    }
    return null;
  }
  if (typeof source !== "string") {
    throw rejecter.reject(
      "invalid_option",
      "array",
      source,
      `array must be a step slug, got ${formatValue(source)}`,
    );
  }
  if (!steps.some((step) => step.slug === source)) {
    throw rejecter.reject(
      "unknown_dependency",
      "array",
      source,
      `array ${JSON.stringify(source)} is not a step of this flow (add it before the map)`,
    );
  }
  if (options.dependsOn !== undefined && (dependsOn.length !== 1 || dependsOn[0] !== source)) {
    throw rejecter.reject(
      "invalid_map_source",
      "dependsOn",
      dependsOn,
      `a map over ${JSON.stringify(source)} must depend on exactly [${
        JSON.stringify(source)
      }], got dependsOn ${formatValue(dependsOn)}`,
    );
  }
  return source;
}
