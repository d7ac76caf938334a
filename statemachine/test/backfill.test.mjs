// Executes statemachine/backfill.asl.json with aws-local-stepfunctions, its Wave Task bound
// to our backfill-wave handler in one long-lived `mssqlcdc invoke --serve --sim` process
// (the simulated SQL Server lives there), and its Restart Task (Step Functions'
// StartExecution) to a recorder: the test starts the next execution with the input
// Restart was given, as Step Functions would. The stream runs before every call but the
// first, as it runs beside the backfill; each backfill-wave call commits --sim-steps
// workload transactions first (20 simulated seconds), so the stream's retention headroom
// (its position minus CDC's low watermark, docs/facts.md) grows from below
// min_headroom_hours to above it. MSSQLCDC_BIN is the binary (scripts/test.sh builds it).

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { loadMachine, startHelper as start } from '../testing/harness.mjs';

const bin = process.env.MSSQLCDC_BIN;
const dir = mkdtempSync(path.join(tmpdir(), 'mssqlcdc-backfill-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function writeSpec(name) {
  const d = path.join(dir, name);
  const spec = {
    app_id: 'orders-v1',
    bootstrap: true,
    snapshot: 'chunked',
    chunk_rows: 1000,
    source: { dsn: 'sqlserver://sim@cdcsim?database=demo', captureInstance: 'dbo_orders' },
    bronze: path.join(d, 'bronze'),
    checkpoint: path.join(d, 'checkpoint'),
    facts_table: path.join(d, 'facts'),
    options: { numPartitions: 2 },
  };
  const p = path.join(dir, `${name}.json`);
  writeFileSync(p, JSON.stringify(spec));
  return p;
}

const machine = await loadMachine('backfill.asl.json'); // one definition for every run: a run must not change it
const noWait = { Wave: 0, Restart: 0 };

test('the backfill machine runs to done: no_snapshot, a waiting_headroom pause, waves, a restart as a new execution', { timeout: 300_000 }, async () => {
  assert.ok(bin, 'MSSQLCDC_BIN is not set (run scripts/test.sh)');
  const helper = start(bin, writeSpec('run'), ['--sim-steps', '4000']);
  try {
    const states = [];
    const restarts = [];
    let calls = 0;
    const local = {
      Wave: async (params) => {
        // The stream's first run opens the snapshot; before it, the backfill finds none.
        if (calls++ > 0) {
          for (let i = 0; i < 50; i++) {
            const r = await helper.call('stream', {});
            if (r.caught_up) break;
          }
        }
        const st = await helper.call('backfill-wave', params);
        states.push(st.state);
        return st;
      },
      Restart: async (input) => {
        restarts.push(input);
        return { ExecutionArn: `arn:aws:states:us-east-1:123456789012:execution:backfill:run-${restarts.length + 1}`, StartDate: new Date().toISOString() };
      },
    };
    const config = {
      params: { min_headroom_hours: 0.02, max_waves: 1, target_wave_seconds: 0 },
      wait_seconds: 0,
      no_snapshot_wait_seconds: 0,
      no_snapshot_max_waits: 3,
      max_calls: 4,
    };
    let input = { config };
    let out;
    for (let execution = 1; ; execution++) {
      assert.ok(execution <= 20, `no done after ${execution - 1} executions: ${states}`);
      const before = restarts.length;
      out = await machine.run(input, {
        overrides: { taskResourceLocalHandlers: local, retryIntervalOverrides: noWait },
        context: { StateMachine: { Id: 'arn:aws:states:us-east-1:123456789012:stateMachine:backfill' }, Execution: { Id: `run-${execution}` } },
      }).result;
      if (restarts.length === before) break;
      // Restarted: the new execution gets the input Restart was given, with the same config.
      const next = restarts[restarts.length - 1];
      assert.deepEqual(next.StateMachineArn, 'arn:aws:states:us-east-1:123456789012:stateMachine:backfill');
      assert.deepEqual(next.Input.config, { ...config, params: config.params });
      assert.equal(next.Input.AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID, `run-${execution}`);
      assert.ok(out.restarted.execution.endsWith(`run-${restarts.length + 1}`), JSON.stringify(out));
      input = next.Input;
    }
    assert.equal(out.status.state, 'done', JSON.stringify(out));
    assert.equal(out.status.chunks_done, out.status.chunks_total);
    assert.ok(out.status.chunks_total >= 5, `10,000 rows in chunks of 1,000: ${out.status.chunks_total} chunks`);
    assert.equal(states[0], 'no_snapshot', String(states));
    assert.ok(states.includes('waiting_headroom'), `no waiting_headroom pause: ${states}`);
    assert.ok(states.indexOf('waiting_headroom') < states.indexOf('running'), `the pause comes before the first wave: ${states}`);
    assert.ok(restarts.length >= 1, 'the machine never restarted itself');

    // The stream catches up; bronze then rebuilds the table, with no key twice.
    for (let i = 0; i < 50; i++) {
      const r = await helper.call('stream', {});
      if (r.caught_up) break;
    }
    const v = await helper.call('_verify', {});
    assert.deepEqual(v.diffs ?? [], []);
    assert.equal(v.duplicates, 0);
    assert.equal(v.ok, true);
  } finally {
    await helper.stop();
  }
});

test('no_snapshot past the grace period fails with the reason; a named error fails the execution with its name', { timeout: 120_000 }, async () => {
  const helper = start(bin, writeSpec('grace'));
  try {
    const calls = [];
    const local = { Wave: async (params) => { calls.push(params); return helper.call('backfill-wave', params); } };
    const exec = machine.run({ config: { no_snapshot_wait_seconds: 0, no_snapshot_max_waits: 2 } }, {
      overrides: { taskResourceLocalHandlers: local, retryIntervalOverrides: noWait },
    });
    await assert.rejects(exec.result, (err) => {
      assert.equal(err.cause?.name ?? err.name, 'NoChunkedSnapshotError', String(err));
      assert.match(String(err.cause?.message ?? err.message), /no chunked snapshot is open for app_id orders-v1/);
      return true;
    });
    assert.equal(calls.length, 3, 'the first call and one per wait of the grace period');
    assert.deepEqual(calls[0], {}, 'without a config, the spec\'s parameters');

    // A parameter out of range (the execution input's config.params is the event): an
    // EventError on the backfill-wave event, caught by States.ALL and not retried (no Retry
    // of the Wave Task names it: it would fail the same way every time).
    const bad = [];
    const exec2 = machine.run({ config: { params: { chunk_rows: 0 } } }, {
      overrides: { taskResourceLocalHandlers: { Wave: async (p) => { bad.push(p); return helper.call('backfill-wave', p); } }, retryIntervalOverrides: noWait },
    });
    await assert.rejects(exec2.result, (err) => {
      assert.equal(err.cause?.name ?? err.name, 'EventError', String(err));
      assert.match(String(err.cause?.message ?? err.message), /^backfill-wave event: chunk_rows: 0: want an integer >= 1; correct it in the event/);
      return true;
    });
    assert.equal(bad.length, 1, 'an EventError is not retried');

    // A transient failure is retried.
    let fail = 1;
    const flaky = {
      Wave: async (p) => {
        if (fail-- > 0) {
          const err = new Error('injected');
          err.name = 'TransientError';
          throw err;
        }
        return { state: 'done', reason: 'x', chunks_done: 1, chunks_total: 1, snapshot: '0x00000001000000010001', waves: 0, rows: 0 };
      },
    };
    const out = await machine.run({}, { overrides: { taskResourceLocalHandlers: flaky, retryIntervalOverrides: noWait } }).result;
    assert.equal(out.status.state, 'done');
  } finally {
    await helper.stop();
  }
});
