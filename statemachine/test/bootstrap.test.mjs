// Executes statemachine/bootstrap.asl.json with aws-local-stepfunctions, every Task bound
// to our Go handlers. The handlers run in one long-lived `mssqlcdc invoke --serve --sim`
// process, as a warm Lambda container serves many invocations: the simulated SQL Server
// lives in that process (a fresh process per step would start a new database), while
// every step keeps its state in the Delta tables and the checkpoint prefix on local disk,
// as it does on S3. The workload commits transactions before every invocation, so writes
// land between the snapshot's stamp and its reads. MSSQLCDC_BIN is the binary
// (scripts/test.sh builds it).

// aws-local-stepfunctions 3 calls Promise.withResolvers (Node 22+).
if (typeof Promise.withResolvers !== 'function') {
  Promise.withResolvers = function withResolvers() {
    let resolve, reject;
    const promise = new Promise((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  };
}

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const { StateMachine } = await import('aws-local-stepfunctions');

const bin = process.env.MSSQLCDC_BIN;
const here = path.dirname(fileURLToPath(import.meta.url));
// Terraform fills the ${...} Resources with ARNs; the local handlers replace them here.
const definition = JSON.parse(
  readFileSync(path.join(here, '..', 'bootstrap.asl.json'), 'utf8').replace(
    /\$\{([a-z_]+)\}/g,
    (_, name) => `arn:aws:lambda:us-east-1:123456789012:function:${name}`,
  ),
);

// helper is one `mssqlcdc invoke --serve` process and its pending requests.
function startHelper(specPath, extra = []) {
  const proc = spawn(bin, ['invoke', '--spec', specPath, '--serve', '--sim', ...extra], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d) => (stderr += d));
  const pending = new Map();
  let next = 1;
  readline.createInterface({ input: proc.stdout }).on('line', (line) => {
    const resp = JSON.parse(line);
    const p = pending.get(resp.id);
    pending.delete(resp.id);
    if (resp.errorType) {
      const err = new Error(resp.errorMessage);
      err.name = resp.errorType; // what Retry and Catch match
      p.reject(err);
    } else {
      p.resolve(resp.output);
    }
  });
  proc.on('exit', (code) => {
    for (const p of pending.values()) p.reject(new Error(`mssqlcdc invoke exited ${code}: ${stderr}`));
  });
  return {
    call(fn, event) {
      return new Promise((resolve, reject) => {
        const id = next++;
        pending.set(id, { resolve, reject });
        proc.stdin.write(JSON.stringify({ id, function: fn, event }) + '\n');
      });
    },
    stop() {
      proc.stdin.end();
      return new Promise((res) => proc.on('close', res));
    },
  };
}

function handlers(helper, calls, faults = {}) {
  const bind = (state, fn) => async (input) => {
    calls.push([state, input.step ?? '']);
    if (faults[state] > 0) {
      faults[state]--;
      const err = new Error(`injected fault in ${state}`);
      err.name = 'Lambda.ServiceException';
      throw err;
    }
    return helper.call(fn, input);
  };
  return {
    Open: bind('Open', 'snapshot'),
    Plan: bind('Plan', 'snapshot'),
    ReadRange: bind('ReadRange', 'snapshot'),
    Commit: bind('Commit', 'snapshot'),
    Close: bind('Close', 'snapshot'),
    Stream: bind('Stream', 'stream'),
  };
}

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

const machine = new StateMachine(definition);
const noWait = { Open: 0, Plan: 0, ReadRange: 0, Commit: 0, Close: 0, Stream: 0 };

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
    assert.equal(calls.filter(([s]) => s === 'ReadRange').length, 3);

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
    assert.deepEqual(calls2.map(([s]) => s), ['Open', 'Commit', 'Close']);
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
  } finally {
    await helper.stop();
  }
});
