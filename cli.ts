/**
 * The `sluice` command line: `deno run -A jsr:@sluice/sluice/cli <command>`. `install` sets sluice
 * up in a Supabase project, `migrate` applies its migrations, `functions generate` writes the
 * worker functions, `dev` runs them locally, and the operator commands of docs/ops.md inspect and
 * steer a running system. `deno run -A jsr:@sluice/sluice/cli --help` lists every command.
 *
 * @module
 */
import { main } from "./src/cli/main.ts";

export { main } from "./src/cli/main.ts";
export type { CliIo, SluiceCliOptions } from "./src/cli/main.ts";

if (import.meta.main) Deno.exit(await main(Deno.args));
