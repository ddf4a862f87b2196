/**
 * Queue names: the TypeScript mirror of the SQL derivation, for synchronous feedback before any
 * database access (docs/architecture.md#queue-modes-and-names). SQL stays authoritative.
 *
 * - A plain flow puts every step on `lower(flow_slug)`.
 * - A step-queued flow gives step `i` the queue `lower(flow_slug || '__' || step_slug)` when that
 *   has at most {@linkcode MAX_QUEUE_NAME_LENGTH} characters, else `lower(flow_slug || '__' || i)`;
 *   when both are too long the whole flow is rejected.
 *
 * Every queue name, generated or routed, obeys one rule ({@linkcode isValidQueueName}, mirroring
 * `sluice.is_valid_queue_name`): ASCII lowercase letters, digits and underscores, at most
 * {@linkcode MAX_QUEUE_NAME_LENGTH} bytes. Lengths are counted in UTF-8 bytes, as PostgreSQL
 * truncates identifiers by bytes.
 *
 * @module
 */

import { QueueNameError } from "./errors.ts";

/**
 * The maximum length of a queue name (PGMQ's limit).
 *
 * @example Usage
 * ```ts
 * import { MAX_QUEUE_NAME_LENGTH } from "@sluice/sluice/admin";
 *
 * console.log(MAX_QUEUE_NAME_LENGTH); // 47
 * ```
 */
export const MAX_QUEUE_NAME_LENGTH = 47;

const QUEUE_NAME = /^[a-z0-9_]+$/;
const encoder = new TextEncoder();

/** The length of `name` in UTF-8 bytes. */
function byteLength(name: string): number {
  return encoder.encode(name).length;
}

/**
 * Whether `name` obeys the queue-name rule: ASCII lowercase letters, digits and underscores, at
 * most {@linkcode MAX_QUEUE_NAME_LENGTH} bytes (the mirror of `sluice.is_valid_queue_name`).
 *
 * @param name The queue name.
 * @returns `true` when the name is valid.
 *
 * @example Usage
 * ```ts
 * import { isValidQueueName } from "@sluice/sluice/admin";
 *
 * console.log(isValidQueueName("orders")); // true
 * console.log(isValidQueueName("\u043erders")); // false: a Cyrillic о
 * ```
 */
export function isValidQueueName(name: string): boolean {
  return typeof name === "string" && QUEUE_NAME.test(name) &&
    byteLength(name) <= MAX_QUEUE_NAME_LENGTH;
}

function candidate(name: string): { name: string; length: number } {
  return { name, length: byteLength(name) };
}

/** `name`, or a QueueNameError (`invalid_name`) when it breaks the character rule. */
function assertQueueCharacters(name: string, flowSlug: string, stepSlugs: string[]): string {
  if (QUEUE_NAME.test(name)) return name;
  throw new QueueNameError(
    `Cannot derive a queue name for flow ${JSON.stringify(flowSlug)}: ${
      JSON.stringify(name)
    } must be ASCII lowercase letters, digits and underscores`,
    {
      flowSlug,
      reason: "invalid_name",
      stepSlugs,
      candidates: [candidate(name)],
      maxLength: MAX_QUEUE_NAME_LENGTH,
    },
  );
}

/**
 * The queue of a plain flow: its lowercased slug.
 *
 * @param flowSlug The concrete flow slug.
 * @returns The queue name.
 * @throws {QueueNameError} When the name is not ASCII lowercase letters, digits and underscores,
 * or exceeds {@linkcode MAX_QUEUE_NAME_LENGTH} characters.
 *
 * @example Usage
 * ```ts
 * import { flowQueueName } from "@sluice/sluice/admin";
 *
 * console.log(flowQueueName("Orders")); // "orders"
 * ```
 */
export function flowQueueName(flowSlug: string): string {
  const name = assertQueueCharacters(flowSlug.toLowerCase(), flowSlug, []);
  if (name.length > MAX_QUEUE_NAME_LENGTH) {
    throw new QueueNameError(
      `Cannot derive the queue of flow ${JSON.stringify(flowSlug)}: ${
        JSON.stringify(name)
      } has ${name.length} characters, more than ${MAX_QUEUE_NAME_LENGTH}`,
      {
        flowSlug,
        reason: "flow_slug_too_long",
        stepSlugs: [],
        candidates: [candidate(name)],
        maxLength: MAX_QUEUE_NAME_LENGTH,
      },
    );
  }
  return name;
}

/**
 * The generated private queue of one step: the readable name when it fits, else the index
 * fallback.
 *
 * @param flowSlug The concrete flow slug.
 * @param stepSlug The step slug.
 * @param stepIndex The zero-based position of the step in the flow.
 * @returns The queue name.
 * @throws {QueueNameError} When the name is not ASCII lowercase letters, digits and underscores,
 * or both names exceed {@linkcode MAX_QUEUE_NAME_LENGTH} characters.
 * @throws {RangeError} When `stepIndex` is not a non-negative integer.
 *
 * @example Usage
 * ```ts
 * import { stepQueueName } from "@sluice/sluice/admin";
 *
 * console.log(stepQueueName("Orders", "fetchItems", 0)); // "orders__fetchitems"
 * console.log(stepQueueName("orders", "x".repeat(60), 3)); // "orders__3"
 * ```
 */
export function stepQueueName(flowSlug: string, stepSlug: string, stepIndex: number): string {
  if (!Number.isSafeInteger(stepIndex) || stepIndex < 0) {
    throw new RangeError(
      `Cannot derive the queue of step ${JSON.stringify(stepSlug)} of flow ${
        JSON.stringify(flowSlug)
      }: stepIndex must be a non-negative integer, got ${stepIndex}`,
    );
  }
  const readable = assertQueueCharacters(`${flowSlug}__${stepSlug}`.toLowerCase(), flowSlug, [
    stepSlug,
  ]);
  if (readable.length <= MAX_QUEUE_NAME_LENGTH) return readable;
  const fallback = `${flowSlug}__${stepIndex}`.toLowerCase();
  if (fallback.length <= MAX_QUEUE_NAME_LENGTH) return fallback;
  throw new QueueNameError(
    `Cannot derive the queue of step ${JSON.stringify(stepSlug)} of flow ${
      JSON.stringify(flowSlug)
    }: ${JSON.stringify(readable)} (${readable.length} characters) and the fallback ${
      JSON.stringify(fallback)
    } (${fallback.length} characters) both exceed ${MAX_QUEUE_NAME_LENGTH} characters`,
    {
      flowSlug,
      reason: "name_too_long",
      stepSlugs: [stepSlug],
      candidates: [candidate(readable), candidate(fallback)],
      maxLength: MAX_QUEUE_NAME_LENGTH,
    },
  );
}

/**
 * The generated private queues of a whole flow, one per step in step order, checked as a set:
 * the flow has steps, its slug leaves room for `<flow>__0`, every step has a name that fits, and
 * no two steps share a queue.
 *
 * With valid slugs no two names can collide (the `__` separator cannot occur inside a slug and
 * step slugs are unique case-insensitively); the check guards arbitrary input, as the SQL does.
 *
 * @param flowSlug The concrete flow slug.
 * @param stepSlugs The step slugs in step order.
 * @returns The queue names, index-aligned with `stepSlugs`.
 * @throws {QueueNameError} When a name cannot be derived (see {@linkcode QueueNameError}).
 *
 * @example Usage
 * ```ts
 * import { stepQueueNames } from "@sluice/sluice/admin";
 *
 * console.log(stepQueueNames("orders", ["fetch", "ship"])); // ["orders__fetch", "orders__ship"]
 * ```
 */
export function stepQueueNames(flowSlug: string, stepSlugs: readonly string[]): string[] {
  const details = { flowSlug, maxLength: MAX_QUEUE_NAME_LENGTH };
  if (stepSlugs.length === 0) {
    throw new QueueNameError(
      `Cannot derive the step queues of flow ${JSON.stringify(flowSlug)}: the flow has no steps`,
      { ...details, reason: "empty_flow", stepSlugs: [], candidates: [] },
    );
  }
  const shortest = `${flowSlug}__0`.toLowerCase();
  if (shortest.length > MAX_QUEUE_NAME_LENGTH) {
    throw new QueueNameError(
      `Cannot derive the step queues of flow ${JSON.stringify(flowSlug)}: even the shortest name ${
        JSON.stringify(shortest)
      } has ${shortest.length} characters, more than ${MAX_QUEUE_NAME_LENGTH} (use a flow slug of at most ${
        MAX_QUEUE_NAME_LENGTH - 3
      } characters)`,
      {
        ...details,
        reason: "flow_slug_too_long",
        stepSlugs: [],
        candidates: [candidate(shortest)],
      },
    );
  }
  const names = stepSlugs.map((stepSlug, index) => stepQueueName(flowSlug, stepSlug, index));
  const owners = new Map<string, string>();
  names.forEach((name, index) => {
    const owner = owners.get(name);
    if (owner !== undefined) {
      throw new QueueNameError(
        `Cannot derive the step queues of flow ${JSON.stringify(flowSlug)}: steps ${
          JSON.stringify(owner)
        } and ${JSON.stringify(stepSlugs[index])} both resolve to queue ${JSON.stringify(name)}`,
        {
          ...details,
          reason: "collision",
          stepSlugs: [owner, stepSlugs[index]],
          candidates: [candidate(name)],
        },
      );
    }
    owners.set(name, stepSlugs[index]);
  });
  return names;
}
