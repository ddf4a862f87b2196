/**
 * `sluice dev`: runs every worker function of the flows module in this one process against
 * `DATABASE_URL`, in development mode (a changed flow shape recompiles once the old workers have
 * drained, instead of failing), printing each function's log records prefixed with its name.
 * Ctrl-C stops every worker gracefully; run it again after changing a flow.
 *
 * @module
 */
import { readCodegenConfig } from "../codegen/config.ts";
import { importFlowsModule } from "../codegen/load_flows.ts";
import { planWorkerFunctions } from "../codegen/plan.ts";
import { projectPath } from "../codegen/_util.ts";
import type { DeployableFlow } from "../dsl/types.ts";
import type { LogRecord } from "../worker/logger.ts";
import { startWorker } from "../worker/start_worker.ts";
import type { WorkerHandle, WorkerOptions } from "../worker/worker_options.ts";
import type { CliIo } from "../ops/commands/_command.ts";

/** Options of {@linkcode devCommand}. */
export interface DevOptions {
  /** The database (`DATABASE_URL`). */
  readonly databaseUrl: string | undefined;
  /** The project's `deno.json`. */
  readonly configPath: string;
  /** Stops the workers when aborted (Ctrl-C otherwise). */
  readonly signal: AbortSignal;
  /** Where to print. */
  readonly io: CliIo;
}

function logLine(functionName: string, record: LogRecord): string {
  const fields = Object.entries(record.fields)
    .filter(([key]) => key !== "worker_id")
    .map(([key, value]) => `${key}=${typeof value === "string" ? value : JSON.stringify(value)}`);
  return [`[${functionName}]`, record.level, record.message, ...fields].join(" ");
}

/**
 * Starts one worker per worker function of the flows module and runs them until `signal` aborts.
 *
 * @param options The database, the project config, the stop signal and the output.
 * @returns The exit code: 0 stopped, 1 failed to start, 2 no database URL.
 *
 * @example Usage
 * ```ts ignore
 * import { devCommand } from "./dev.ts";
 *
 * const stop = new AbortController();
 * await devCommand({ databaseUrl: url, configPath: "./deno.json", signal: stop.signal, io });
 * ```
 */
export async function devCommand(options: DevOptions): Promise<number> {
  const { io } = options;
  if (options.databaseUrl === undefined || options.databaseUrl === "") {
    io.err(
      "Cannot start sluice dev: DATABASE_URL is not set; set it to your development database, " +
        "e.g. the one `supabase start` runs: " +
        "DATABASE_URL=postgres://postgres:postgres@127.0.0.1:54322/postgres",
    );
    return 2;
  }
  const config = await readCodegenConfig(options.configPath);
  const namespace = await importFlowsModule(config);
  const specs = planWorkerFunctions(namespace, projectPath(config.root, config.flowsModule));
  const workers: WorkerHandle[] = [];
  try {
    for (const spec of specs) {
      workers.push(
        await startWorker(
          namespace[spec.exportName] as DeployableFlow,
          {
            connectionString: options.databaseUrl,
            functionName: spec.functionName,
            ...(spec.stepSlug === null ? {} : { stepSlug: spec.stepSlug }),
            environment: "development",
            poolSize: 2,
            logger: (record) => io.out(logLine(spec.functionName, record)),
          } as WorkerOptions,
        ),
      );
    }
    io.out(
      `sluice dev: ${workers.length} worker functions running in development mode ` +
        `(${specs.map((spec) => spec.functionName).join(", ")}); Ctrl-C stops them`,
    );
    await new Promise<void>((resolve) => {
      if (options.signal.aborted) resolve();
      options.signal.addEventListener("abort", () => resolve(), { once: true });
    });
    return 0;
  } catch (error) {
    io.err(`Cannot start sluice dev: ${error instanceof Error ? error.message : error}`);
    return 1;
  } finally {
    await Promise.all(workers.map((worker) => worker.stop()));
  }
}
