// A worker in a subprocess that reports on stdout, one line per event, so a test can wait for a
// line and then stop, freeze or kill the process for real.

/** A running worker subprocess. */
export interface WorkerProcess extends AsyncDisposable {
  /** The subprocess. */
  readonly child: Deno.ChildProcess;
  /** Everything it writes to stderr, once it has exited. */
  readonly stderr: Promise<string>;
  /** The next line it prints; throws with its stderr when it exits first. */
  nextLine(): Promise<string>;
}

/**
 * Runs `deno run -A <script> ...args`. Disposing SIGKILLs it (if it still runs) and waits for it
 * to exit; disposing twice is harmless.
 */
export function spawnWorkerProcess(script: URL, args: string[]): WorkerProcess {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", script.pathname, ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  return {
    child,
    stderr,
    async nextLine() {
      while (!buffered.includes("\n")) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the worker subprocess exited early: ${await stderr}`);
        buffered += value;
      }
      const end = buffered.indexOf("\n");
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + 1);
      return line;
    },
    async [Symbol.asyncDispose]() {
      try {
        child.kill("SIGKILL");
      } catch {
        // Already exited.
      }
      await child.status;
      await reader.cancel().catch(() => {});
      await stderr.catch(() => {});
    },
  };
}
