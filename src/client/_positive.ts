// The interval checks shared by the client functions that wait (waitForRun, watchRun).

/** Returns `value`, or throws a RangeError "`action`: `name` must be a positive number". */
export function positive(value: number, name: string, action: string): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw new RangeError(`${action}: ${name} must be a positive number, got ${String(value)}`);
  }
  return value;
}
