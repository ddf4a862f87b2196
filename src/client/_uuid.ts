// UUID checks shared by the client functions that take a run id.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Throws a TypeError naming `what` unless `value` is a UUID string. */
export function assertUuid(value: unknown, what: string): asserts value is string {
  if (typeof value !== "string" || !UUID.test(value)) {
    throw new TypeError(`${what}: the run id must be a UUID, got ${describe(value)}`);
  }
}

function describe(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(value) : typeof value;
}
