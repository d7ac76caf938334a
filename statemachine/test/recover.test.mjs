// Executes statemachine/recover.asl.json with aws-local-stepfunctions, every Task bound to
// our Go handlers in one `mssqlcdc invoke --serve --sim` process (as bootstrap.test.mjs
// does): a stream with on_data_loss "resnapshot" falls behind CDC cleanup (_purge), returns
// outcome resnapshot_required, and the recover machine, started with that output as
// EventBridge's rule starts it, takes the full re-snapshot into generation 1; the stream
// then runs generation 1 and the rebuild equals the table (docs/stream.md "Data loss";
// docs/operations.md "Data loss, by itself"). MSSQLCDC_BIN is the binary (scripts/test.sh
// builds it).

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { bootstrapMachine, recoverMachine, recoverHandlers, handlers, noWait, startHelper as start } from '../testing/harness.mjs';

const bin = process.env.MSSQLCDC_BIN;
const dir = mkdtempSync(path.join(tmpdir(), 'mssqlcdc-recover-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function writeSpec(name) {
  const d = path.join(dir, name);
  const spec = {
    app_id: 'orders-v1',
    bootstrap: true,
    on_data_loss: 'resnapshot',
    source: { dsn: 'sqlserver://sim@cdcsim?database=demo', captureInstance: 'dbo_orders' },
    bronze: path.join(d, 'bronze'),
    checkpoint: path.join(d, 'checkpoint'),
    facts_table: path.join(d, 'facts'),
    options: { numPartitions: 3 },
  };
  const p = path.join(dir, `${name}.json`);
  writeFileSync(p, JSON.stringify(spec));
  return p;
}

const bootstrap = await bootstrapMachine();
const recover = await recoverMachine();

// run executes the recover machine as execution name on input, its Tasks bound to helper.
function run(helper, name, input, calls, faults = {}) {
  return recover.run(input, {
    overrides: { taskResourceLocalHandlers: recoverHandlers(helper, calls, faults), retryIntervalOverrides: noWait },
    context: { Execution: { Name: name } },
  }).result;
}

// drain runs the stream until it is caught up and returns its outputs.
async function drain(helper) {
  const outs = [];
  for (let i = 0; i < 30; i++) {
    const r = await helper.call('stream', {});
    outs.push(r);
    if (r.caught_up) return outs;
  }
  assert.fail(`the stream did not catch up: ${JSON.stringify(outs.at(-1))}`);
}

// lose bootstraps the table, streams it, then purges past the stream: the next stream
// invocation records the attempt to open generation 1 and returns its outcome.
async function lose(helper) {
  await bootstrap.run({}, { overrides: { taskResourceLocalHandlers: handlers(helper, []), retryIntervalOverrides: noWait } }).result;
  await drain(helper);
  const p = await helper.call('_purge', {});
  assert.ok(p.max_lsn, JSON.stringify(p));
  const out = await helper.call('stream', {});
  assert.equal(out.outcome, 'resnapshot_required', JSON.stringify(out));
  assert.equal(out.batches, 0);
  assert.equal(out.recovery.generation, 1);
  assert.equal(out.recovery.attempt, 1);
  assert.ok(out.recovery.lost_to_ts, 'the gap has its end');
  return out;
}

test('the recover machine takes the re-snapshot the stream asks for; the stream goes on in generation 1', { timeout: 180_000 }, async () => {
  assert.ok(bin, 'MSSQLCDC_BIN is not set (run scripts/test.sh)');
  const helper = start(bin, writeSpec('recover'), ['--sim-steps', '20']);
  try {
    const asked = await lose(helper);
    // Asked again while no execution holds the attempt: the same attempt, nothing read.
    const again = await helper.call('stream', {});
    assert.equal(again.outcome, 'resnapshot_required');
    assert.equal(again.recovery.attempt, 1);
    const before = await helper.call('_verify', {});

    // EventBridge's rule passes the stream's output as the input. A transient fault at
    // every step is retried.
    const calls = [];
    const out = await run(helper, 'recover-a', asked, calls, { RecoverOpen: 1, Plan: 1, ReadRange: 2, RecoverCommit: 1 });
    assert.equal(out.open.status, 'opened');
    assert.equal(out.open.generation, 1);
    assert.equal(out.open.execution, 'recover-a');
    assert.equal(out.commit.generation, 1);
    assert.equal(out.commit.snapshot.lsn, out.open.snapshot.lsn);
    assert.ok(out.commit.version >= 0 && out.commit.rows > 0, JSON.stringify(out.commit));
    assert.equal(out.stream, undefined, 'without start_stream the next scheduled run streams');
    const reads = calls.filter((s) => s === 'ReadRange').length;
    assert.equal(reads, out.plan.ranges.length + 2, `calls ${calls}`);

    // A second execution for the same loss (a repeated event) finds nothing open.
    const calls2 = [];
    const out2 = await run(helper, 'recover-b', asked, calls2);
    assert.equal(out2.open.status, 'none');
    assert.deepEqual(calls2, ['RecoverOpen']);

    const mid = await helper.call('_verify', {});
    assert.equal(mid.table_reads, before.table_reads + out.plan.ranges.length, 'the re-snapshot read each range once');
    const outs = await drain(helper);
    assert.ok(outs.every((o) => o.generation === 1 && !o.outcome), JSON.stringify(outs));
    const v = await helper.call('_verify', {});
    assert.deepEqual(v.diffs ?? [], []);
    assert.equal(v.ok, true);
    assert.equal(v.duplicates, 0);
    assert.equal(v.generation, 1);
    assert.equal(v.resnapshots, 1);
    assert.equal(v.table_reads, mid.table_reads, 'a stream invocation read the table');

    // A second loss within resnapshot_interval_days (7 days) is DataLossError, by name.
    await helper.call('_purge', {});
    await assert.rejects(helper.call('stream', {}), (err) => {
      assert.equal(err.name, 'DataLossError');
      assert.match(err.message, /resnapshot_interval_days/);
      return true;
    });
  } finally {
    await helper.stop();
  }
});

test('an execution that failed keeps the attempt; another waits for it unless it takes over', { timeout: 180_000 }, async () => {
  const helper = start(bin, writeSpec('takeover'));
  try {
    const asked = await lose(helper);
    // Execution a claims the attempt, stamps L, then fails at plan by a name nothing retries.
    const failing = recoverHandlers(helper, []);
    failing.Plan = async () => {
      const err = new Error('injected');
      err.name = 'UnexpectedError';
      throw err;
    };
    const exec = recover.run(asked, { overrides: { taskResourceLocalHandlers: failing, retryIntervalOverrides: noWait }, context: { Execution: { Name: 'recover-a' } } });
    await assert.rejects(exec.result);
    // The stream sees the claim: it waits and asks for no second execution.
    const waiting = await helper.call('stream', {});
    assert.equal(waiting.outcome, 'resnapshot_running', JSON.stringify(waiting));
    assert.equal(waiting.recovery.execution, 'recover-a');
    // Execution b without takeover ends at once, reading nothing.
    const calls = [];
    const busy = await run(helper, 'recover-b', asked, calls);
    assert.equal(busy.open.status, 'busy');
    assert.equal(busy.open.holder, 'recover-a');
    assert.deepEqual(calls, ['RecoverOpen']);
    // A person restarts it with takeover: b takes the attempt and commits generation 1.
    const calls2 = [];
    const took = await run(helper, 'recover-c', { takeover: true, start_stream: true }, calls2);
    assert.equal(took.open.status, 'opened');
    assert.equal(took.commit.generation, 1);
    assert.equal(took.stream.generation, 1, JSON.stringify(took.stream));
    await drain(helper);
    const v = await helper.call('_verify', {});
    assert.equal(v.ok, true, JSON.stringify(v.diffs));
    assert.equal(v.resnapshots, 1);
  } finally {
    await helper.stop();
  }
});
