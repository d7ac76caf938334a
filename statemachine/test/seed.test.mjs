// Executes statemachine/seed.asl.json with aws-local-stepfunctions, every Task bound to our
// Go handlers in one long-lived `mssqlcdc invoke --serve --sim` process (the simulated SQL
// Server lives in that process; every step keeps its state in the Delta tables and the
// checkpoint prefix on local disk, as on S3). The copy is exported from the simulated table
// while the workload commits between its reads, as a user's nightly export is, with as_of
// taken before it started (docs/seed.md). MSSQLCDC_BIN is the binary (scripts/test.sh
// builds it).

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { loadMachine, seedHandlers, noWait, startHelper as start } from '../testing/harness.mjs';

const bin = process.env.MSSQLCDC_BIN;
const startHelper = (specPath, extra) => start(bin, specPath, extra);

const dir = mkdtempSync(path.join(tmpdir(), 'mssqlcdc-seed-asl-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function writeSpec(name) {
  const d = path.join(dir, name);
  const spec = {
    app_id: 'orders-seed',
    bootstrap: true,
    source: { dsn: 'sqlserver://sim@cdcsim?database=demo', captureInstance: 'dbo_orders' },
    bronze: path.join(d, 'bronze'),
    checkpoint: path.join(d, 'checkpoint'),
    facts_table: path.join(d, 'facts'),
  };
  const p = path.join(dir, `${name}.json`);
  writeFileSync(p, JSON.stringify(spec));
  return { spec: p, copy: path.join(d, 'copy') };
}

const machine = await loadMachine('seed.asl.json');
const run = (input, helper, calls, faults) =>
  machine.run(input, { overrides: { taskResourceLocalHandlers: seedHandlers(helper, calls, faults), retryIntervalOverrides: noWait } }).result;

test('the seed machine seeds a copy taken under a workload; the stream from L rebuilds the table; a rerun converts nothing', { timeout: 180_000 }, async () => {
  assert.ok(bin, 'MSSQLCDC_BIN is not set (run scripts/test.sh)');
  const { spec, copy } = writeSpec('run');
  const helper = startHelper(spec, ['--sim-steps', '20']);
  try {
    const exp = await helper.call('_export', { to: copy, parts: 4, steps: 40 });
    assert.ok(exp.rows >= 10000, `exported ${exp.rows} rows`);

    // Transient failures of every step are retried; the seed converges.
    const calls = [];
    const faults = { Plan: 1, ConvertGroup: 2, Commit: 1, Close: 1, Stream: 1 };
    const out = await run({ copy, as_of: exp.as_of, start_stream: true }, helper, calls, faults);
    assert.equal(out.plan.status, 'planned');
    assert.equal(out.plan.files, 4);
    assert.ok(out.plan.groups.length >= 1);
    assert.equal(out.commit.skipped, false);
    assert.equal(out.commit.rows, exp.rows);
    assert.equal(out.offset.lsn, out.plan.seed.lsn);
    assert.ok(out.offset.lsn <= exp.max_lsn_before, `L ${out.offset.lsn} is after the export started (${exp.max_lsn_before})`);
    assert.equal(calls.filter((s) => s === 'ConvertGroup').length, out.plan.groups.length + 2);
    assert.ok(out.stream, 'start_stream ran the stream');

    for (let i = 0; i < 30; i++) {
      const r = await helper.call('stream', {});
      if (r.caught_up) break;
    }
    const v1 = await helper.call('_verify', {});
    assert.deepEqual(v1.diffs ?? [], []);
    assert.equal(v1.ok, true);
    assert.equal(v1.table_reads, 0, 'the seed or the stream read the table');

    // The whole machine again: plan finds the seed, nothing is converted or committed.
    const calls2 = [];
    const out2 = await run({ copy, as_of: exp.as_of }, helper, calls2);
    assert.equal(out2.plan.status, 'found');
    assert.equal(out2.plan.seed.lsn, out.plan.seed.lsn);
    assert.equal(out2.commit.skipped, true);
    assert.equal(out2.commit.rows, exp.rows);
    assert.deepEqual(calls2, ['Plan', 'Commit', 'Close']);
    // The workload committed during the rerun's steps: drain them, and bronze still
    // rebuilds the table, its seed rows counted once.
    for (let i = 0; i < 30; i++) {
      const r = await helper.call('stream', {});
      if (r.caught_up) break;
    }
    const v2 = await helper.call('_verify', {});
    assert.deepEqual(v2.diffs ?? [], []);
    assert.equal(v2.ok, true);
    assert.equal(v2.duplicates, 0);
    assert.equal(v2.table_reads, 0);
  } finally {
    await helper.stop();
  }
});

test('a refusal fails the seed execution with its declared name', { timeout: 120_000 }, async () => {
  const { spec, copy } = writeSpec('refused');
  const helper = startHelper(spec);
  const failsWith = async (input, name, calls = []) => {
    await assert.rejects(run(input, helper, calls), (err) => {
      assert.equal(err.cause?.name ?? err.name, name, String(err));
      return true;
    });
  };
  try {
    const exp = await helper.call('_export', { to: copy, parts: 2, steps: 5 });
    // No copy there: ConfigError from the plan, before anything is converted.
    const calls = [];
    await failsWith({ copy: path.join(dir, 'nowhere'), as_of: exp.as_of }, 'ConfigError', calls);
    assert.deepEqual(calls, ['Plan']);
    // A time before any commit the database holds: DataLossError.
    await failsWith({ copy, as_of: '2001-01-01T00:00:00Z' }, 'DataLossError');

    const out = await run({ copy, as_of: exp.as_of }, helper, []);
    assert.equal(out.commit.rows, exp.rows);
    // Another as_of (a later LSN) while bronze holds that seed: SnapshotExistsError.
    await failsWith({ copy, as_of: exp.max_lsn_after }, 'SnapshotExistsError');
  } finally {
    await helper.stop();
  }
});
