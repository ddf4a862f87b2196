/**
 * `UnknownRunError`: a watched run does not exist.
 *
 * @module
 */

/**
 * Thrown from a watch's iteration when no run has the id. A `RangeError`, as before it had a
 * class of its own, so that only this case reads as "no such run", never a `RangeError` from
 * elsewhere (a connection cut mid-message). Its `name` stays `"RangeError"`, as callers read it.
 */
export class UnknownRunError extends RangeError {
  /** The run id asked for. */
  readonly runId: string;

  /**
   * @param runId The run id asked for.
   */
  constructor(runId: string) {
    super(`Cannot watch run ${runId}: no such run`);
    this.runId = runId;
  }
}
