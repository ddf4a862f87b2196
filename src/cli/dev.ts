/**
 * `sluice dev`: runs every worker function of the flows module in this one process against
 * `DATABASE_URL` (without it, or with `SLUICE_EMBEDDED=1`, against an embedded PGlite database in
 * this process, migrated, kept in `SLUICE_EMBEDDED_DIR` when set, loaded in seconds from a cached
 * snapshot of a migrated database), in development mode (a changed flow shape recompiles once the
 * old workers have drained, instead of failing), printing each function's log records prefixed with its name.
 * Ctrl-C stops every worker gracefully; run it again after changing a flow.
 *
 * @module
 */
import { readCodegenConfig } from "../codegen/config.ts";
import { importFlowsModule } from "../codegen/load_flows.ts";
import { planWorkerFunctions } from "../codegen/plan.ts";
import { projectPath } from "../codegen/project_path.ts";
import type { DeployableFlow } from "../dsl/types.ts";
import type { LogRecord } from "../worker/logger.ts";
import { startWorker } from "../worker/start_worker.ts";
import type { WorkerHandle, WorkerOptions } from "../worker/worker_options.ts";
import type { CliIo } from "./commands/command_types.ts";

/** Options of {@linkcode devCommand}. */
export interface DevOptions {
  /** The database (`DATABASE_URL`); without it the embedded database. */
  readonly databaseUrl: string | undefined;
  /**
   * The environment: `SLUICE_EMBEDDED=1` (or `true`) forces the embedded database,
   * `SLUICE_EMBEDDED_DIR` keeps it in that directory.
   *
   * @default {Deno.env}
   */
  readonly env?: Pick<Deno.Env, "get">;
  /**
   * The embedded database's port on 127.0.0.1 (`--port`); ignored with `DATABASE_URL`.
   *
   * @default {0} (a free port)
   */
  readonly port?: number;
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
 * @returns The exit code: 0 stopped, 1 failed to start.
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
  // The flows module first: a definition error needs no database.
  const config = await readCodegenConfig(options.configPath);
  const namespace = await importFlowsModule(config);
  const specs = planWorkerFunctions(namespace, projectPath(config.root, config.flowsModule));
  const env = options.env ?? Deno.env;
  const forced = ["1", "true"].includes(env.get("SLUICE_EMBEDDED") ?? "");
  let databaseUrl = options.databaseUrl ?? "";
  let embedded: { stop(): Promise<void> } | null = null;
  if (databaseUrl === "" || forced) {
    io.out(
      `sluice dev: ${forced ? "SLUICE_EMBEDDED is set" : "DATABASE_URL is not set"}, so the ` +
        "workers run on an embedded database (PGlite, in this process); starting it",
    );
    // Loaded only here: no other command needs PGlite.
    const { startEmbeddedSluice } = await import("../embedded/embedded_sluice.ts");
    const dataDir = env.get("SLUICE_EMBEDDED_DIR") || undefined;
    try {
      const db = await startEmbeddedSluice({
        dataDir,
        port: options.port ?? 0,
        onProgress: (message) => io.out(`sluice dev: ${message}`),
      });
      embedded = db;
      databaseUrl = db.url;
    } catch (error) {
      io.err(`Cannot start sluice dev: ${error instanceof Error ? error.message : error}`);
      return 1;
    }
    io.out(
      `sluice dev: the embedded database (${
        dataDir === undefined ? "in memory" : `kept in ${dataDir}`
      }) is ready with sluice installed; start runs from another shell with ` +
        `DATABASE_URL=${databaseUrl}`,
    );
  }
  try {
    return await runWorkers(options, databaseUrl, namespace, specs);
  } finally {
    await embedded?.stop();
  }
}

async function runWorkers(
  options: DevOptions,
  databaseUrl: string,
  namespace: Record<string, unknown>,
  specs: ReturnType<typeof planWorkerFunctions>,
): Promise<number> {
  const { io } = options;
  const workers: WorkerHandle[] = [];
  try {
    for (const spec of specs) {
      workers.push(
        await startWorker(
          namespace[spec.exportName] as DeployableFlow,
          {
            connectionString: databaseUrl,
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
