// Where the CLI's commands print.

/** Output streams, replaceable in tests. */
export interface CliIo {
  /** Receives normal output, one line per call. */
  readonly out: (line: string) => void;
  /** Receives errors and usage, one line per call. */
  readonly err: (line: string) => void;
}
