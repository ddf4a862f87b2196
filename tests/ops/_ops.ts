// Running `deno task ops` in-process in the ops tests, with the output collected while it runs.
import { main } from "../../src/cli/main.ts";
import type { TestDatabase } from "../_db.ts";

/** Output of an ops command, collected line by line while it runs. */
export class Output {
  readonly out: string[] = [];
  readonly err: string[] = [];
  readonly io = {
    out: (line: string) => void this.out.push(line),
    err: (line: string) => void this.err.push(line),
  };
  get text(): string {
    return this.out.join("\n");
  }
  get errors(): string {
    return this.err.join("\n");
  }
}

/** Runs `deno task ops <args>` in-process; the output fills while the returned promise runs. */
export function ops(db: TestDatabase, args: string[], output = new Output()) {
  const code = main(args, { databaseUrl: db.url, io: output.io });
  return { code, output };
}

/** Runs `deno task ops <args>` to its end: the exit code, stdout and stderr. */
export async function opsDone(db: TestDatabase, ...args: string[]) {
  const { code, output } = ops(db, args);
  return { code: await code, out: output.text, err: output.errors };
}
