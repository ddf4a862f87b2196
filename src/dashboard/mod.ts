/**
 * The local web dashboard: flows, queues, worker functions, route coverage and every run's DAG,
 * live. Started by `deno task dashboard` (the `dashboard` ops command).
 *
 * @example Usage
 * ```ts ignore
 * import { connect } from "@sluice/sluice";
 * import { startDashboard } from "./mod.ts";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * const dashboard = startDashboard(sql, { port: 4300 });
 * console.log(`open ${dashboard.url}`);
 * ```
 *
 * @module
 */

export * from "./server.ts";
