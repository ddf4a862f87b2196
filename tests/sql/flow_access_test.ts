// Per-flow access (issue 43 finding 5, docs/privileges.md#per-flow-access): two teams share one
// database, each role granted its own flows. Team A calls every function of schemas sluice and
// pgmq it may execute, aimed at team B's run, wait, queue, schedule, worker and flow: none reads
// B's input, and B's rows stay exactly as they were. Each team runs its own flow end to end.
import assert from "node:assert/strict";
import postgres, { type Sql } from "postgres";
import { getRun } from "../../src/client/get_run.ts";
import { sendSignal } from "../../src/client/send_signal.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { Flow, signalPayload } from "../../src/dsl/flow.ts";
import { startWorker } from "../../src/worker/start_worker.ts";
import type { WorkerHandle } from "../../src/worker/worker_options.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { scaled, waitUntil } from "../_support.ts";

/** A team: its role, its flow (`ask -> decision`, a signal wait), a client as the role. */
interface Team {
  role: string;
  prefix: string;
  flow: ReturnType<typeof teamFlow>;
  sql: Sql;
  worker?: WorkerHandle;
}

function teamFlow(slug: string) {
  return new Flow<{ id: string; secret: string }>({ slug })
    .step({ slug: "ask" }, (input) => ({ id: input.id }))
    .waitForSignal({
      slug: "decision",
      dependsOn: ["ask"],
      key: (deps) => `approval:${deps.ask.id}`,
      payload: signalPayload<boolean>(),
      timeoutSeconds: 3600,
      // A buffered signal sent before the run may approve it: the cross-team case to refuse.
      acceptSignalsSentBeforeRun: true,
    });
}

/** Sends a signal with a fresh id. */
function signal(sql: Sql, key: string, payload: boolean) {
  return sendSignal(sql, { key, payload, signalId: crypto.randomUUID() });
}

/** A client whose sessions run as `role` (SET ROLE at connection start). */
function connectAs(db: TestDatabase, role: string, max = 1): Sql {
  return postgres(db.url, {
    prepare: false,
    max,
    onnotice: () => {},
    connection: { options: `-c role=${role}` },
  });
}

async function createTeam(db: TestDatabase, name: string, tag: string): Promise<Team> {
  const role = `sluice_team_${name}_${tag}`;
  const prefix = `t${name}_${tag}`;
  await db.sql.unsafe(`create role ${role} nologin`);
  await db.sql`select sluice.grant_access(${role}, ${[`${prefix}_*`]}::text[])`;
  return { role, prefix, flow: teamFlow(`${prefix}_orders`), sql: connectAs(db, role) };
}

async function dropTeam(db: TestDatabase, team: Team): Promise<void> {
  await team.worker?.stop();
  await team.sql.end();
  await db.sql.unsafe(`drop owned by ${team.role} cascade`);
  await db.sql.unsafe(`drop role ${team.role}`);
}

/** Starts the team's worker as its role and a run that waits on `approval:<id>`. */
async function waitingRun(db: TestDatabase, team: Team, id: string) {
  team.worker ??= await startWorker(team.flow, {
    sql: connectAs(db, team.role, 4),
    heartbeatIntervalMs: 100,
    stalledCheckIntervalMs: 100,
    logger: () => {},
    env: {},
  });
  const secret = `${team.prefix}-SECRET-${id}`;
  const runId = await startFlow(team.sql, team.flow, { id, secret });
  await waitUntil(async () => {
    const [row] = await db.sql`
      select status from sluice.step_states where run_id = ${runId} and step_slug = 'decision'`;
    return row?.status === "waiting";
  }, "the run waits for its signal");
  return { runId, secret, key: `approval:${id}` };
}

/**
 * Everything of team B's as the owner sees it: its rows in every sluice table, the signals it
 * sent and its queue's messages. Equal before and after team A's calls, or A changed something of B's.
 */
async function snapshot(
  db: TestDatabase,
  flow: string,
  queue: string,
  sender: string,
): Promise<string> {
  const [{ rows }] = await db.sql.unsafe(
    `
    select jsonb_build_object(
      'flows', (select jsonb_agg(to_jsonb(x) order by x.flow_slug) from sluice.flows x where x.flow_slug = $1::text),
      'steps', (select jsonb_agg(to_jsonb(x) order by x.step_slug) from sluice.steps x where x.flow_slug = $1::text),
      'deps', (select jsonb_agg(to_jsonb(x) order by x.step_slug) from sluice.deps x where x.flow_slug = $1::text),
      'aliases', (select jsonb_agg(to_jsonb(x) order by x.alias) from sluice.aliases x where x.flow_slug = $1::text),
      'history', (select jsonb_agg(to_jsonb(x) order by x.generation) from sluice.alias_history x where x.flow_slug = $1::text),
      'queues', (select jsonb_agg(to_jsonb(x) order by x.queue_name) from sluice.queues x where x.queue_name = $2::text),
      'runs', (select jsonb_agg(to_jsonb(x) order by x.run_id) from sluice.runs x where x.flow_slug = $1::text),
      'states', (select jsonb_agg(to_jsonb(x) order by x.run_id, x.step_slug) from sluice.step_states x where x.flow_slug = $1::text),
      'tasks', (select jsonb_agg(to_jsonb(x) order by x.run_id, x.step_slug, x.task_index) from sluice.step_tasks x where x.flow_slug = $1::text),
      'schedules', (select jsonb_agg(to_jsonb(x) - 'advanced_at' order by x.schedule_name) from sluice.schedules x where x.target = $1::text),
      'signals', (select jsonb_agg(to_jsonb(x) order by x.signal_id) from sluice.signals x where x.sent_by = $3::text),
      'workers', (select jsonb_agg(to_jsonb(x) - 'last_heartbeat_at' order by x.worker_id) from sluice.workers x where x.flow_slug = $1::text),
      'functions', (select jsonb_agg(to_jsonb(f) - 'updated_at' - 'last_invoked_at' order by f.function_name) from sluice.worker_functions f
        where f.function_name in (select w.function_name from sluice.workers w where w.flow_slug = $1::text)),
      'messages', (select jsonb_agg(to_jsonb(m) - 'vt' - 'read_ct' order by m.msg_id) from pgmq.${
      "q_" + queue
    } m),
      'archive', (select jsonb_agg(to_jsonb(m) order by m.msg_id) from pgmq.${"a_" + queue} m),
      'debounced', (select jsonb_agg(to_jsonb(x) order by x.debounce_key) from sluice.debounced_starts x where x.flow_slug = $1::text),
      'concurrency_keys', (select jsonb_agg(to_jsonb(k) order by k.run_id) from sluice.run_concurrency_keys k
        where k.run_id in (select r.run_id from sluice.runs r where r.flow_slug = $1::text))
    )::text as rows`,
    [flow, queue, sender],
  );
  return rows;
}

/** What team A passes for a parameter of a sluice or pgmq function, aimed at team B's things. */
interface Target {
  runId: string;
  flow: string;
  queue: string;
  key: string;
  schedule: string;
  workerId: string;
  functionName: string;
  messageId: string;
  definition: string;
}

function argumentFor(name: string, type: string, b: Target): string {
  const text = (value: string) => `'${value.replaceAll("'", "''")}'`;
  const byName: Record<string, string> = {
    run_id: `${text(b.runId)}::uuid`,
    child_run_id: `${text(b.runId)}::uuid`,
    worker_id: `${text(b.workerId)}::uuid`,
    run_ids: `array[${text(b.runId)}]::uuid[]`,
    queue_name: text(b.queue),
    queue: text(b.queue),
    queue_names: `array[${text(b.queue)}]`,
    key: text(b.key),
    signal_id: text(`forged-${b.key}`),
    schedule_name: text(b.schedule),
    function_name: text(b.functionName),
    function_names: `array[${text(b.functionName)}]`,
    step_slug: text("decision"),
    step_slugs: `array['decision']`,
    message_ids: `array[${b.messageId}]::bigint[]`,
    msg_ids: `array[${b.messageId}]::bigint[]`,
    msg_id: `${b.messageId}::bigint`,
    definition: `${text(b.definition)}::jsonb`,
    results: `jsonb_build_array(jsonb_build_object('run_id', ${
      text(b.runId)
    }, 'step_slug', 'ask', 'task_index', 0, 'attempt', 1, 'worker_id', ${
      text(b.workerId)
    }, 'output', '{"forged": true}'::jsonb))`,
    settings: `jsonb_build_object(${text(b.functionName)}, false)`,
    due: `jsonb_build_array(jsonb_build_object('schedule_name', ${text(b.schedule)}))`,
    environment: text("development"),
    new_status: text("cancelled"),
    status: text("cancelled"),
    target_kind: text("flow"),
    cron: text("* * * * *"),
    timezone: text("UTC"),
    missed: text("skip"),
    started_via: text("sql"),
    queue_mode: text("flow"),
  };
  if (name in byName) return byName[name];
  switch (type) {
    case "text":
      return text(b.flow);
    case "text[]":
      return `array[${text(b.flow)}]`;
    case "uuid":
      return `${text(b.runId)}::uuid`;
    case "jsonb":
    case "json":
      return `'{"forged": true}'::jsonb`;
    case "integer":
    case "bigint":
    case "smallint":
    case "numeric":
    case "double precision":
    case "real":
      return `1`;
    case "bigint[]":
    case "integer[]":
      return `array[${b.messageId}]::${type}`;
    case "jsonb[]":
      return `array['{"forged": true}'::jsonb]`;
    case "boolean":
      return "true";
    case "timestamp with time zone":
      return "clock_timestamp() + interval '1 day'";
    case "interval":
      return "interval '0 seconds'";
    case "regclass":
      return text(`pgmq.q_${b.queue}`);
    case "name":
      return "current_user";
  }
  const composite = /^sluice\.(\w+)$/.exec(type) ?? /^(\w+)$/.exec(type);
  if (composite !== null && ["runs", "step_states", "signals"].includes(composite[1])) {
    const where = composite[1] === "signals" ? "" : `where x.run_id = ${text(b.runId)}`;
    return `(select x from sluice.${composite[1]} x ${where} limit 1)`;
  }
  if (type.startsWith("pgmq.")) return `null::${type}`;
  throw new Error(`flow_access_test: no argument for parameter ${name} of type ${type}`);
}

/**
 * Every routine team A may execute, by signature: how it is called. `auto` builds the arguments
 * from the parameters aimed at team B's things (argumentFor); `trigger` routines cannot be called
 * directly. A routine missing here fails the test: add its case (and its check, if it reaches a
 * flow's data).
 */
const CASES: Record<string, "auto" | "trigger" | "call"> = {
  "sluice.access_scope(name)": "auto",
  "sluice.activate_alias(text,text,bigint,boolean,text)": "auto",
  "sluice.apply_run_priority(uuid,integer)": "auto",
  "sluice.archive_messages(text,bigint[])": "auto",
  "sluice.archive_messages(text[],bigint[])": "auto",
  "sluice.backoff_delay_seconds(integer,integer)": "auto",
  "sluice.begin_wait(uuid,text,text,text,integer,jsonb)": "auto",
  "sluice.browser_error_message(text)": "auto",
  "sluice.browser_event(jsonb)": "auto",
  "sluice.caller_role()": "auto",
  "sluice.caller_traceparent()": "auto",
  "sluice.cancel_run(uuid,text)": "auto",
  "sluice.cancel_run_set(uuid[],text)": "auto",
  "sluice.cancel_runs(text,text,text,timestamp with time zone,integer)": "auto",
  "sluice.check_cancel_reason(text,text)": "auto",
  "sluice.check_concurrency_options(jsonb)": "auto",
  "sluice.check_debounce_option(text,jsonb)": "auto",
  "sluice.check_enum(jsonb,text[],text)": "auto",
  "sluice.check_flow_access(text,text)": "auto",
  "sluice.check_priority_option(text,jsonb)": "auto",
  "sluice.check_run_access(uuid,text)": "auto",
  "sluice.check_run_input(text,jsonb)": "auto",
  "sluice.check_start_options(text,jsonb)": "auto",
  "sluice.check_subflow_child(text,jsonb)": "auto",
  "sluice.check_timeout(jsonb,text)": "auto",
  "sluice.check_whole_number(jsonb,integer,text)": "auto",
  "sluice.child_event(sluice.runs,text)": "auto",
  "sluice.claim_respawn(text,timestamp with time zone)": "auto",
  "sluice.clear_restart_pause(text)": "auto",
  "sluice.compile_generation(text)": "auto",
  "sluice.complete_step(uuid,text,text,jsonb)": "auto",
  "sluice.complete_task(uuid,text,integer,integer,uuid,jsonb)": "auto",
  "sluice.complete_tasks(jsonb)": "auto",
  "sluice.concurrency_key_path(jsonb)": "auto",
  "sluice.create_flow(jsonb,jsonb)": "auto",
  "sluice.create_queue(text,text)": "auto",
  "sluice.create_run(text,text,jsonb,uuid)": "auto",
  "sluice.create_schedule(text,text,text,jsonb,text,text,text,timestamp with time zone,timestamp with time zone,timestamp with time zone)":
    "auto",
  "sluice.cron_field_problem(integer,text,boolean)": "auto",
  "sluice.cron_problem(text)": "auto",
  "sluice.cron_replace_names(text,text[],text[])": "auto",
  "sluice.default_max_json_bytes()": "auto",
  "sluice.default_max_map_tasks()": "auto",
  "sluice.definition_shape(jsonb)": "auto",
  "sluice.delete_archived_messages(text[],bigint[])": "auto",
  "sluice.delete_flow_and_data(text,boolean)": "auto",
  "sluice.delete_schedule(text)": "auto",
  "sluice.dependency_outputs(uuid,text,text)": "auto",
  "sluice.deprecate_function_workers(text[])": "auto",
  "sluice.derive_queue_name(text,text,text,integer)": "auto",
  "sluice.drop_queue(text,text)": "auto",
  "sluice.end_subflow_child(uuid)": "auto",
  "sluice.ensure_flow_compiled(jsonb,text)": "auto",
  "sluice.exhaust_task(uuid,text,integer,text)": "auto",
  "sluice.fail_run(uuid,text,text)": "auto",
  "sluice.fail_task(uuid,text,integer,integer,uuid,text,double precision)": "auto",
  "sluice.finish_prune(timestamp with time zone,bigint)": "auto",
  "sluice.finish_run_if_done(uuid)": "auto",
  "sluice.fire_due_schedules(timestamp with time zone,integer)": "auto",
  "sluice.function_outside_scope(text,text[])": "auto",
  "sluice.grant_queue_access(text,text)": "auto",
  "sluice.heartbeat_worker(uuid)": "auto",
  "sluice.heartbeat_worker(uuid,jsonb)": "auto",
  "sluice.is_valid_queue_name(text)": "auto",
  "sluice.is_valid_slug(text)": "auto",
  "sluice.iso_instant(timestamp with time zone)": "auto",
  "sluice.lock_queue_names(jsonb)": "auto",
  "sluice.lock_run_ancestors(uuid[])": "auto",
  "sluice.lock_run_steps(uuid[],text[],boolean)": "auto",
  "sluice.lock_signal_keys(text[])": "auto",
  "sluice.max_cancel_reason_length()": "auto",
  "sluice.max_cron_length()": "auto",
  "sluice.max_debounce_seconds()": "auto",
  "sluice.max_event_bytes()": "auto",
  "sluice.max_idempotency_key_length()": "auto",
  "sluice.max_priority()": "auto",
  "sluice.max_queue_name_length()": "auto",
  "sluice.max_retry_delay_seconds()": "auto",
  "sluice.max_signal_key_length()": "auto",
  "sluice.max_subflow_depth()": "auto",
  "sluice.note_freed_slot()": "trigger",
  "sluice.notify_queue(text)": "auto",
  "sluice.pause_schedule(text)": "auto",
  "sluice.prune_cutoff(interval,integer)": "auto",
  "sluice.prune_data_older_than(interval,integer,jsonb)": "call",
  "sluice.prune_runs_batch(timestamp with time zone,integer)": "auto",
  "sluice.prune_signals(timestamp with time zone)": "auto",
  "sluice.prune_worker_functions(interval)": "auto",
  "sluice.queue_owner_error(text,text,text,text)": "auto",
  "sluice.read_messages(text,integer,integer)": "auto",
  "sluice.read_messages_with_poll(text,integer,integer,integer,integer)": "auto",
  "sluice.read_prioritized(text,integer,integer)": "auto",
  "sluice.read_run_events(uuid)": "auto",
  "sluice.recreate_flow(text,jsonb,jsonb)": "auto",
  "sluice.refresh_runtime_options(jsonb)": "auto",
  "sluice.refuse_alias_history_change()": "trigger",
  "sluice.refuse_routed(jsonb)": "auto",
  "sluice.register_worker(uuid,text,text,text,text,bigint)": "auto",
  "sluice.reject_task_identity_change()": "trigger",
  "sluice.release_due_waits(integer)": "auto",
  "sluice.release_held_tasks()": "auto",
  "sluice.release_held_tasks(text,text,text)": "auto",
  "sluice.release_noted_slots()": "trigger",
  "sluice.requeue_stalled_tasks()": "auto",
  "sluice.restrict_queue_tables(text)": "auto",
  "sluice.resume_schedule(text,timestamp with time zone,timestamp with time zone,timestamp with time zone)":
    "auto",
  "sluice.retry_run(uuid,boolean)": "auto",
  "sluice.run_ancestors(uuid[])": "auto",
  "sluice.run_channel(uuid)": "auto",
  "sluice.run_event(sluice.runs,text)": "auto",
  "sluice.run_events(uuid)": "auto",
  "sluice.run_outside_scope(uuid)": "auto",
  "sluice.run_topic(uuid)": "auto",
  "sluice.schedule_ticks_kept()": "auto",
  "sluice.scope_covers(text[],text)": "auto",
  "sluice.send_child_event()": "trigger",
  "sluice.send_run_event(uuid,jsonb)": "auto",
  "sluice.send_run_status_event()": "trigger",
  "sluice.send_signal(text,jsonb,text)": "auto",
  "sluice.send_step_progress_event()": "trigger",
  "sluice.send_step_status_event()": "trigger",
  "sluice.sender_covers(text,text)": "auto",
  "sluice.set_schedule_next_due(jsonb)": "auto",
  "sluice.set_worker_functions_enabled(jsonb)": "auto",
  "sluice.shape_differences(jsonb,jsonb)": "auto",
  "sluice.signal_id_taken(sluice.signals,text)": "auto",
  "sluice.signal_lifetime()": "auto",
  "sluice.skip_steps(uuid,text,text,text,boolean)": "auto",
  "sluice.stall_margin_seconds()": "auto",
  "sluice.start_debounced(text,text,jsonb,jsonb)": "auto",
  "sluice.start_due_debounced(integer)": "auto",
  "sluice.start_flow(text,jsonb,uuid)": "auto",
  "sluice.start_flow(text,jsonb,uuid,jsonb)": "auto",
  "sluice.start_flow_version(text,jsonb,uuid)": "auto",
  "sluice.start_flow_version(text,jsonb,uuid,jsonb)": "auto",
  "sluice.start_ready_steps(uuid)": "auto",
  "sluice.start_run(text,jsonb)": "auto",
  "sluice.start_run(text,jsonb,jsonb)": "auto",
  "sluice.start_subflow(uuid,text,text,jsonb)": "auto",
  "sluice.start_tasks(text,bigint[],uuid,jsonb)": "auto",
  "sluice.start_with_options(text,text,jsonb,uuid,jsonb)": "auto",
  "sluice.step_event(sluice.step_states,text)": "auto",
  "sluice.step_progress_event(sluice.step_states,timestamp with time zone)": "auto",
  "sluice.step_queue_name(text,text,integer)": "auto",
  "sluice.stop_worker(uuid)": "auto",
  "sluice.store_run_concurrency_key(uuid,text)": "auto",
  "sluice.store_wait_parameters(uuid,text,text,jsonb)": "auto",
  "sluice.stored_shape(text)": "auto",
  "sluice.subflow_child_error(sluice.runs)": "auto",
  "sluice.subflow_output(uuid,text,boolean)": "auto",
  "sluice.task_concurrency_key(uuid,text[])": "auto",
  "sluice.terminate_tasks(uuid,text[],text)": "auto",
  "sluice.track_worker_function(text)": "auto",
  "sluice.try_uuid(text)": "auto",
  "sluice.validate_definition(jsonb)": "auto",
  "sluice.validate_routes(jsonb,jsonb)": "auto",
  "sluice.validate_wait_step(text,jsonb,text[],text[])": "auto",
  "sluice.wait_for_messages(text[],integer,integer)": "auto",
  "sluice.wait_options(jsonb)": "auto",
  "sluice.worker_fenced(uuid)": "auto",
  "sluice.worker_heartbeat_ttl()": "auto",
};

/** pgmq's functions differ between the compat layer and the extension: all are called `auto`. */
const PGMQ_SKIPPED = new Set([
  // Blocks for its whole poll time whatever it may read; read_messages_with_poll covers the path.
  "read_with_poll",
]);

interface Routine {
  signature: string;
  schema: string;
  name: string;
  kind: string;
  returns: string;
  params: { name: string; type: string }[];
}

async function executableRoutines(db: TestDatabase, role: string): Promise<Routine[]> {
  return await db.sql<Routine[]>`
    select p.oid::regprocedure::text as signature, n.nspname as schema, p.proname as name,
      p.prokind::text as kind, p.prorettype::regtype::text as returns,
      coalesce((
        select jsonb_agg(jsonb_build_object('name', coalesce(p.proargnames[t.n], ''),
          'type', format_type(t.oid, null)) order by t.n)
        from unnest(coalesce(p.proallargtypes,
          string_to_array(p.proargtypes::text, ' ')::oid[])) with ordinality as t(oid, n)
        where p.proargmodes is null or p.proargmodes[t.n] in ('i', 'b')
      ), '[]') as params
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname in ('sluice', 'pgmq') and has_function_privilege(${role}, p.oid, 'execute')
    order by 1`;
}

function callOf(routine: Routine, b: Target): string {
  const args = routine.params.map((p) => argumentFor(p.name, p.type, b));
  if (routine.kind === "p") {
    return `call ${routine.schema}.${routine.name}(${args.join(", ")})`;
  }
  const call = `${routine.schema}.${routine.name}(${args.join(", ")})`;
  return routine.returns === "void" || routine.returns === "record" ||
      routine.returns.startsWith("SETOF") || /^(pgmq|sluice)\./.test(routine.returns)
    ? `select to_jsonb(x)::text as out from ${call} x`
    : `select (${call})::text as out`;
}

Deno.test("two teams with per-flow grants: team A reaches nothing of team B's through any function, and each runs its own flow", async () => {
  await using db = await freshDatabase();
  const tag = crypto.randomUUID().slice(0, 8);
  const a = await createTeam(db, "a", tag);
  const b = await createTeam(db, "b", tag);
  try {
    const ownA = await waitingRun(db, a, `a${tag}`);
    const ownB = await waitingRun(db, b, `b${tag}`);
    const bFlow = b.flow.slug;
    // A pending debounced start of team B's, due in an hour: not to be joined, replaced or started.
    await b.sql`
      select sluice.start_flow(${bFlow}, '{"id": "pending", "secret": "s"}'::jsonb, null,
        '{"debounce": {"key": "b-pending", "window_seconds": 3600}}'::jsonb)`;
    // And a concurrency key of team B's run (its customer's name in it): not to be read or changed.
    await db.sql`
      insert into sluice.run_concurrency_keys (run_id, concurrency_key)
      values (${ownB.runId}::uuid, ${`${b.prefix}_customer`})`;
    await db.sql`
      select sluice.create_schedule(${`${b.prefix}_nightly`}, 'flow', ${bFlow},
        '{"id": "x", "secret": "s"}'::jsonb, '0 3 * * *', 'UTC', 'skip',
        clock_timestamp() + interval '1 day', clock_timestamp() + interval '2 days')`;
    // B's worker stops, so that nothing but team A's calls could change B's rows from here on.
    await b.worker?.stop();
    b.worker = undefined;
    // A message in B's queue, so the queue functions have something to take.
    const [{ msg }] = await db.sql.unsafe(
      `select pgmq.send($1::text, '{"queued": true}'::jsonb)::text as msg`,
      [bFlow],
    );
    const [worker] = await db.sql`
      select worker_id::text, function_name from sluice.workers where flow_slug = ${bFlow}`;
    const [{ def }] = await db.sql`
      select jsonb_build_object('flow_slug', ${bFlow}::text, 'queue_mode', 'flow', 'options', '{}'::jsonb,
        'steps', '[]'::jsonb, 'routes', '[]'::jsonb)::text as def`;
    const target: Target = {
      runId: ownB.runId,
      flow: bFlow,
      queue: bFlow,
      key: ownB.key,
      schedule: `${b.prefix}_nightly`,
      workerId: worker.worker_id,
      functionName: worker.function_name,
      messageId: msg,
      definition: def,
    };

    // Team A's view of the tables and views holds nothing of B's.
    for (
      const relation of [
        "sluice.runs",
        "sluice.step_states",
        "sluice.step_tasks",
        "sluice.flows",
        "sluice.steps",
        "sluice.aliases",
        "sluice.queues",
        "sluice.schedules",
        "sluice.debounced_starts",
        "sluice.run_concurrency_keys",
        "sluice.rate_limit_starts",
        "sluice.concurrency_slots",
        "sluice.workers",
        "sluice.worker_functions",
        "sluice.live_workers",
        "sluice.queue_health",
        "sluice.route_coverage",
        "sluice.version_drain",
        "sluice.worker_function_drain",
        "sluice.worker_function_status",
      ]
    ) {
      const [{ rows }] = await a.sql.unsafe(
        `select coalesce(jsonb_agg(to_jsonb(x)), '[]')::text as rows from ${relation} x`,
      );
      assert.ok(!rows.includes(b.prefix), `${relation} shows team B's rows to team A: ${rows}`);
    }
    await assert.rejects(a.sql.unsafe(`select * from pgmq.q_${bFlow}`), { code: "42501" });
    await assert.rejects(a.sql.unsafe(`select setval('pgmq.q_${bFlow}_msg_id_seq', 1)`), {
      code: "42501",
    });
    await assert.rejects(a.sql`select * from sluice.access_grants`, { code: "42501" });
    // Nor does it join, replace or start team B's pending debounced start.
    await assert.rejects(
      a.sql`select sluice.start_debounced(${bFlow}, ${bFlow}, '{"id": "forged"}'::jsonb,
        '{"key": "b-pending", "window_seconds": 1}'::jsonb)`,
      { code: "SLA01" },
    );
    // The owner (a superuser here) is in no scope, though pg_has_role counts it a member of both.
    await db.sql`select sluice.check_flow_access('zz_no_team_flow', 'start flow zz_no_team_flow')`;

    const routines = await executableRoutines(db, a.role);
    const missing = routines.filter((r) => r.schema === "sluice" && !(r.signature in CASES));
    assert.deepEqual(
      missing.map((r) => r.signature),
      [],
      "routines team A may execute with no case in CASES",
    );
    const before = await snapshot(db, bFlow, target.queue, b.role);
    assert.ok(before.includes(ownB.secret));
    const refusals: Record<string, string> = {};
    for (const routine of routines) {
      if (routine.schema === "sluice" && CASES[routine.signature] === "trigger") continue;
      if (routine.schema === "pgmq" && PGMQ_SKIPPED.has(routine.name)) continue;
      if (routine.returns === "trigger") continue;
      const statement = callOf(routine, target);
      const outcome = await a.sql.unsafe(statement).then(
        (rows) => JSON.stringify(rows),
        (error) => {
          refusals[routine.signature] = error.code;
          return `${error.code} ${error.message} ${error.detail ?? ""}`;
        },
      );
      assert.ok(
        !outcome.includes(ownB.secret),
        `${statement} showed team B's input to team A: ${outcome}`,
      );
      assert.equal(
        await snapshot(db, bFlow, target.queue, b.role),
        before,
        `${statement} (${outcome.slice(0, 300)}) changed team B's things`,
      );
    }
    // The entry points say why, naming the role and the flow.
    for (
      const [signature, pattern] of [
        ["sluice.cancel_run(uuid,text)", "cancel run"],
        ["sluice.retry_run(uuid,boolean)", "retry run"],
        ["sluice.start_flow(text,jsonb,uuid)", "start flow"],
        ["sluice.start_run(text,jsonb)", "start flow"],
        ["sluice.read_run_events(uuid)", "read run"],
        ["sluice.delete_flow_and_data(text,boolean)", "delete flow"],
        ["sluice.ensure_flow_compiled(jsonb,text)", "compile flow"],
        ["sluice.cancel_runs(text,text,text,timestamp with time zone,integer)", "cancel runs"],
        ["sluice.activate_alias(text,text,bigint,boolean,text)", "activate alias"],
      ]
    ) {
      assert.equal(refusals[signature], "SLA01", `${signature} refused with SLA01`);
      const routine = routines.find((r) => r.signature === signature)!;
      await assert.rejects(a.sql.unsafe(callOf(routine, target)), (error: Error) => {
        assert.match(
          error.message,
          new RegExp(`Cannot ${pattern}.*role "${a.role}" has no access to flow "${bFlow}"`),
        );
        return true;
      });
    }

    // B's forged approval did not approve; its own does. A's own signal, cancel and reads work.
    assert.equal((await signal(a.sql, ownB.key, true)).released, 0);
    assert.equal((await signal(a.sql, ownA.key, true)).released, 1);
    await waitUntil(
      async () => (await getRun(a.sql, ownA.runId))?.status === "completed",
      "team A's run completes on its own signal",
      scaled(15_000),
    );
    assert.equal((await signal(b.sql, ownB.key, false)).released, 1);
    // Team A's calls above pruned and stopped its own worker too: a new one serves the next run.
    await a.worker?.stop();
    a.worker = undefined;
    const second = await waitingRun(db, a, `a2${tag}`);
    const [{ cancelled }] = await a.sql`
      select sluice.cancel_run(${second.runId}::uuid, 'ours') ->> 'outcome' as cancelled`;
    assert.equal(cancelled, "cancelled");
    assert.equal(await getRun(a.sql, ownB.runId), null);
    assert.ok((await getRun(b.sql, ownB.runId)) !== null);
  } finally {
    await dropTeam(db, a);
    await dropTeam(db, b);
  }
});

Deno.test("a signal team A sent before team B's wait began does not complete it", async () => {
  await using db = await freshDatabase();
  const tag = crypto.randomUUID().slice(0, 8);
  const a = await createTeam(db, "a", tag);
  const b = await createTeam(db, "b", tag);
  try {
    await signal(a.sql, `approval:b${tag}`, true);
    const { runId } = await waitingRun(db, b, `b${tag}`);
    const [state] = await db.sql`
      select status from sluice.step_states where run_id = ${runId} and step_slug = 'decision'`;
    assert.equal(state.status, "waiting");
  } finally {
    await dropTeam(db, a);
    await dropTeam(db, b);
  }
});

Deno.test("grant_access(role, flows) refuses an empty list and entries that are no slug or prefix, naming them", async () => {
  await using db = await freshDatabase();
  const role = `sluice_bad_grant_${crypto.randomUUID().slice(0, 8)}`;
  await db.sql.unsafe(`create role ${role} nologin`);
  try {
    await assert.rejects(db.sql`select sluice.grant_access(${role}, '{}'::text[])`, {
      message:
        `Cannot grant sluice access to role '${role}': the list of flows is empty (null grants every flow)`,
    });
    await assert.rejects(db.sql`select sluice.grant_access(${role}, array['ok', 'a*b'])`, {
      message:
        `Cannot grant sluice access to role '${role}': a*b is neither a flow slug nor a slug prefix ending in *`,
    });
    const [{ granted }] = await db.sql`
      select has_schema_privilege(${role}, 'sluice', 'usage') as granted`;
    assert.equal(granted, false);
  } finally {
    await db.sql.unsafe(`drop owned by ${role}`);
    await db.sql.unsafe(`drop role ${role}`);
  }
});
