// Executes statemachine/bootstrap.asl.json with aws-local-stepfunctions, every Task bound
// to our Go handlers. The handlers run in one long-lived `mssqlcdc invoke --serve --sim`
// process, as a warm Lambda container serves many invocations: the simulated SQL Server
// lives in that process (a fresh process per step would start a new database), while
// every step keeps its state in the Delta tables and the checkpoint prefix on local disk,
// as it does on S3. The workload commits transactions before every invocation, so writes
// land between the snapshot's stamp and its reads. MSSQLCDC_BIN is the binary
// (scripts/test.sh builds it).

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { bootstrapMachine, handlers, noWait, startHelper as start } from '../testing/harness.mjs';

const bin = process.env.MSSQLCDC_BIN;
const startHelper = (specPath, extra) => start(bin, specPath, extra);

const dir = mkdtempSync(path.join(tmpdir(), 'mssqlcdc-asl-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function writeSpec(name) {
  const d = path.join(dir, name);
  const spec = {
    app_id: 'orders-v1',
    bootstrap: true,
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

const machine = await bootstrapMachine();

test('the bootstrap machine, then the stream, rebuilds the table; a rerun reads nothing', { timeout: 120_000 }, async () => {
  assert.ok(bin, 'MSSQLCDC_BIN is not set (run scripts/test.sh)');
  const helper = startHelper(writeSpec('run'), ['--sim-steps', '40']);
  try {
    const calls = [];
    const exec = machine.run({ start_stream: true }, {
      overrides: { taskResourceLocalHandlers: handlers(helper, calls), retryIntervalOverrides: noWait },
    });
    const out = await exec.result;
    assert.equal(out.open.status, 'opened');
    assert.equal(out.plan.ranges.length, 3);
    assert.equal(out.commit.skipped, false);
    assert.ok(out.commit.rows > 0);
    assert.equal(out.offset.lsn, out.open.snapshot.lsn);
    assert.equal(calls.filter((s) => s === 'ReadRange').length, 3);

    // Drain what the workload committed meanwhile, then compare.
    for (let i = 0; i < 20; i++) {
      const r = await helper.call('stream', {});
      if (r.caught_up) break;
    }
    const v1 = await helper.call('_verify', {});
    assert.deepEqual(v1.diffs ?? [], []);
    assert.equal(v1.ok, true);

    // The whole machine again: open finds the snapshot, nothing is read.
    const calls2 = [];
    const out2 = await machine.run({}, { overrides: { taskResourceLocalHandlers: handlers(helper, calls2), retryIntervalOverrides: noWait } }).result;
    assert.equal(out2.open.status, 'found');
    assert.equal(out2.open.snapshot.lsn, out.open.snapshot.lsn);
    assert.deepEqual(calls2, ['Open', 'Commit', 'Close']);
    const v2 = await helper.call('_verify', {});
    assert.equal(v2.table_reads, v1.table_reads, 'the rerun read the table');
  } finally {
    await helper.stop();
  }
});

test('transient failures are retried; a named failure fails the execution with its name', { timeout: 120_000 }, async () => {
  const helper = startHelper(writeSpec('faults'));
  try {
    const calls = [];
    const faults = { Open: 1, Plan: 1, ReadRange: 2, Commit: 1, Close: 1 };
    const out = await machine.run({}, {
      overrides: { taskResourceLocalHandlers: handlers(helper, calls, faults), retryIntervalOverrides: noWait },
    }).result;
    assert.equal(out.open.status, 'opened');
    assert.equal(out.commit.skipped, false);
    const v = await helper.call('_verify', {});
    assert.equal(v.duplicates, 0);

    // A step the handler refuses by name: the execution fails with that name.
    const bad = handlers(helper, []);
    bad.Plan = async () => helper.call('snapshot', { step: 'plan', snapshot: { lsn: '0x00000000000000000001', commit_ts: '' } });
    const exec = machine.run({}, { overrides: { taskResourceLocalHandlers: { ...bad, Open: async () => ({ status: 'opened', snapshot: { lsn: '0x00000000000000000001', commit_ts: '' } }) }, retryIntervalOverrides: noWait } });
    await assert.rejects(exec.result, (err) => {
      assert.equal(err.cause?.name ?? err.name, 'PlanNotFoundError', String(err));
      return true;
    });

    // An LSN that is no LSN is refused by the handler's event check, by name, before it
    // names a staging key.
    const bad2 = handlers(helper, []);
    bad2.Plan = async () => helper.call('snapshot', { step: 'plan', snapshot: { lsn: '../../x', commit_ts: '' } });
    const exec2 = machine.run({}, { overrides: { taskResourceLocalHandlers: { ...bad2, Open: async () => ({ status: 'opened', snapshot: { lsn: '../../x', commit_ts: '' } }) }, retryIntervalOverrides: noWait } });
    await assert.rejects(exec2.result, (err) => {
      assert.equal(err.cause?.name ?? err.name, 'EventError', String(err));
      return true;
    });
  } finally {
    await helper.stop();
  }
});
