// Executes statemachine/bootstrap.asl.json and statemachine/seed.asl.json with
// aws-local-stepfunctions on the emulated
// AWS storage: bronze, the facts table and the checkpoint prefix are s3:// URLs on the
// in-process S3 emulator (internal/emulators/s3server, gofakes3, path-style), and every
// Delta commit goes through the S3DynamoDBLogStore on dynalite. The handlers run in one
// `mssqlcdc invoke --serve --sim` process (see bootstrap.test.mjs for why one), which
// reads the S3 and DynamoDB endpoints from the spec's storage section.
//
// The test builds and starts its own S3 emulator and creates its own DynamoDB log table;
// dynalite is found through MSSQLCDC_DYNAMODB_ENDPOINT (scripts/test.sh starts it). When
// that is unset the test is skipped, and fails when CI is set. MSSQLCDC_BIN is the
// mssqlcdc binary; when unset the test builds one.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { bootstrapMachine, loadMachine, handlers, seedHandlers, noWait, startHelper as start } from '../testing/harness.mjs';

const run = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, '..', '..');
const dynamoEndpoint = process.env.MSSQLCDC_DYNAMODB_ENDPOINT ?? '';
const missing = 'MSSQLCDC_DYNAMODB_ENDPOINT is not set: run scripts/test.sh (or make test), which starts dynalite';
// CI must run every test: there the missing emulator is a failure, elsewhere a skip.
const skip = !dynamoEndpoint && !process.env.CI ? missing : false;

// The emulators check no signature, but the SDK signs, so the children get static keys
// (and no profile or instance role to look for).
const awsEnv = (() => {
  const env = { ...process.env };
  delete env.AWS_PROFILE;
  delete env.AWS_SESSION_TOKEN;
  return {
    ...env,
    AWS_ACCESS_KEY_ID: 'AKIDEMULATOR',
    AWS_SECRET_ACCESS_KEY: 'emulator-secret',
    AWS_REGION: 'us-east-1',
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_CONFIG_FILE: '/dev/null',
    AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
  };
})();

const dir = mkdtempSync(path.join(tmpdir(), 'mssqlcdc-asl-s3-'));
let bin = process.env.MSSQLCDC_BIN;
let s3 = null; // the s3server child
let s3Endpoint = '';
const bucket = 'lake';
const dynamoTable = `delta_log_asl_${process.pid}_${Date.now().toString(36)}`;

// startS3 builds and starts internal/emulators/s3server, which creates the bucket and the
// DynamoDB log table, and resolves with its endpoint (the first line it prints).
async function startS3() {
  const exe = path.join(dir, 's3server');
  await run('go', ['build', '-o', exe, './internal/emulators/s3server'], { cwd: root, timeout: 300_000 });
  const args = ['-bucket', bucket, '-create-dynamo-table', `${dynamoEndpoint},${dynamoTable}`, '-exit-on-stdin-eof'];
  s3 = spawn(exe, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  s3.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve, reject) => {
    const rl = readline.createInterface({ input: s3.stdout });
    rl.once('line', (line) => resolve(line.trim()));
    s3.once('exit', (code) => reject(new Error(`s3server exited ${code} before serving: ${stderr}`)));
  });
}

before(async () => {
  if (!dynamoEndpoint) return;
  if (!bin) {
    bin = path.join(dir, 'mssqlcdc');
    await run('go', ['build', '-o', bin, './cmd/mssqlcdc'], { cwd: root, timeout: 300_000 });
  }
  s3Endpoint = await startS3();
}, { timeout: 600_000 });

after(async () => {
  if (s3 && s3.exitCode === null) {
    const closed = new Promise((res) => s3.once('close', res));
    s3.stdin.end(); // -exit-on-stdin-eof
    await closed;
  }
  rmSync(dir, { recursive: true, force: true });
});

function writeSpec(name) {
  const spec = {
    app_id: 'orders-v1',
    bootstrap: true,
    source: { dsn: 'sqlserver://sim@cdcsim?database=demo', captureInstance: 'dbo_orders' },
    bronze: `s3://${bucket}/${name}/bronze`,
    checkpoint: `s3://${bucket}/${name}/checkpoint`,
    facts_table: `s3://${bucket}/${name}/facts`,
    options: { numPartitions: 3 },
    storage: {
      region: 'us-east-1',
      s3_endpoint: s3Endpoint,
      s3_path_style: true,
      dynamo_table: dynamoTable,
      dynamo_endpoint: dynamoEndpoint,
    },
  };
  const p = path.join(dir, `${name}.json`);
  writeFileSync(p, JSON.stringify(spec));
  return p;
}

// startHelper is one `mssqlcdc invoke --serve --sim` process with the emulators' keys.
const startHelper = (specPath, extra) => start(bin, specPath, extra, awsEnv);

// inspect describes the Delta table at url on the emulators.
async function inspect(url) {
  const { stdout } = await run(bin, ['inspect', '--json', url, '--endpoint', s3Endpoint, '--path-style',
    '--dynamo-table', dynamoTable, '--dynamo-endpoint', dynamoEndpoint, '--region', 'us-east-1'], { env: awsEnv });
  return JSON.parse(stdout);
}

// dynamoItems counts the log table's entries for a table path (dynalite checks no
// signature, so a plain JSON request does).
async function dynamoItems(tablePath) {
  const res = await fetch(dynamoEndpoint, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/x-amz-json-1.0',
      'X-Amz-Target': 'DynamoDB_20120810.Query',
      Authorization: 'AWS4-HMAC-SHA256 Credential=AKIDEMULATOR/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0',
      'X-Amz-Date': '20260101T000000Z',
    },
    body: JSON.stringify({
      TableName: dynamoTable,
      KeyConditionExpression: 'tablePath = :p',
      ExpressionAttributeValues: { ':p': { S: tablePath } },
      Select: 'COUNT',
    }),
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  return body.Count;
}

// drain runs the stream until it has caught up with the simulated source.
async function drain(helper) {
  for (let i = 0; i < 20; i++) {
    if ((await helper.call('stream', {})).caught_up) return;
  }
  assert.fail('the stream did not catch up in 20 runs');
}

const machine = await bootstrapMachine();

test('on S3 (gofakes3) and DynamoDB (dynalite): the bootstrap machine, then the stream, rebuilds the table; a rerun reads nothing', { skip, timeout: 300_000 }, async () => {
  assert.ok(dynamoEndpoint, missing);
  const specPath = writeSpec('orders');
  const helper = startHelper(specPath, ['--sim-steps', '40']);
  try {
    const calls = [];
    const out = await machine.run({ start_stream: true }, {
      overrides: { taskResourceLocalHandlers: handlers(helper, calls), retryIntervalOverrides: noWait },
    }).result;
    assert.equal(out.open.status, 'opened');
    assert.equal(out.plan.ranges.length, 3);
    assert.equal(out.commit.skipped, false);
    assert.ok(out.commit.rows > 0);
    assert.equal(out.offset.lsn, out.open.snapshot.lsn);
    assert.deepEqual(calls, ['Open', 'Plan', 'ReadRange', 'ReadRange', 'ReadRange', 'Commit', 'Close', 'Stream']);

    // Drain what the workload committed meanwhile, then compare the rebuild of bronze
    // with the simulated table.
    await drain(helper);
    const v1 = await helper.call('_verify', {});
    assert.deepEqual(v1.diffs ?? [], []);
    assert.equal(v1.duplicates, 0);
    assert.ok(v1.table_rows > 0);
    assert.equal(v1.ok, true);

    // The tables are on S3 and committed through the DynamoDB log store.
    const bronze = await inspect(`s3://${bucket}/orders/bronze`);
    assert.ok(bronze.version >= 1, `bronze version ${bronze.version}`);
    assert.ok(bronze.rows >= out.commit.rows, `bronze rows ${bronze.rows} < snapshot rows ${out.commit.rows}`);
    assert.ok(Object.keys(bronze.txnVersions).length > 0, 'bronze holds no txn');
    assert.equal(await dynamoItems(`s3://${bucket}/orders/bronze`), bronze.version + 1);
    const facts = await inspect(`s3://${bucket}/orders/facts`);
    assert.ok(facts.rows > 0, 'no facts rows');

    // The whole machine again: open finds the snapshot on S3, nothing is read, nothing
    // is committed.
    const calls2 = [];
    const out2 = await machine.run({}, { overrides: { taskResourceLocalHandlers: handlers(helper, calls2), retryIntervalOverrides: noWait } }).result;
    assert.equal(out2.open.status, 'found');
    assert.equal(out2.open.snapshot.lsn, out.open.snapshot.lsn);
    assert.deepEqual(calls2, ['Open', 'Commit', 'Close']);
    assert.equal((await inspect(`s3://${bucket}/orders/bronze`)).version, bronze.version, 'the rerun committed to bronze');
    // The workload went on committing before each of the rerun's steps: the stream
    // carries those, and bronze still rebuilds to the table.
    await drain(helper);
    const v2 = await helper.call('_verify', {});
    assert.equal(v2.table_reads, v1.table_reads, 'the rerun read the table');
    assert.deepEqual(v2.diffs ?? [], []);
    assert.equal(v2.ok, true);
  } finally {
    await helper.stop();
  }
});

const seedMachine = await loadMachine('seed.asl.json');

test('on S3 (gofakes3) and DynamoDB (dynalite): the seed machine seeds a copy taken under a workload, then the stream rebuilds the table; a rerun converts nothing', { skip, timeout: 300_000 }, async () => {
  assert.ok(dynamoEndpoint, missing);
  const specPath = writeSpec('seeded');
  const helper = startHelper(specPath, ['--sim-steps', '20']);
  const runSeed = (input, calls, faults) =>
    seedMachine.run(input, { overrides: { taskResourceLocalHandlers: seedHandlers(helper, calls, faults), retryIntervalOverrides: noWait } }).result;
  try {
    // The copy is a user's export on local disk; bronze, facts and the seed's staging
    // area are on S3, every commit through the DynamoDB log store.
    const copy = path.join(dir, 'seeded-copy');
    const exp = await helper.call('_export', { to: copy, parts: 3, steps: 30 });
    const calls = [];
    const out = await runSeed({ copy, as_of: exp.as_of, start_stream: true }, calls, { ConvertGroup: 1, Commit: 1 });
    assert.equal(out.plan.status, 'planned');
    assert.equal(out.plan.files, 3);
    assert.equal(out.commit.skipped, false);
    assert.equal(out.commit.rows, exp.rows);
    assert.equal(out.offset.lsn, out.plan.seed.lsn);
    assert.ok(out.offset.lsn <= exp.max_lsn_before, `L ${out.offset.lsn} is after the export started (${exp.max_lsn_before})`);
    assert.equal(calls.filter((s) => s === 'ConvertGroup').length, out.plan.groups.length + 1);

    await drain(helper);
    const v1 = await helper.call('_verify', {});
    assert.deepEqual(v1.diffs ?? [], []);
    assert.equal(v1.duplicates, 0);
    assert.equal(v1.table_reads, 0, 'the seed or the stream read the table');
    assert.equal(v1.ok, true);

    const bronze = await inspect(`s3://${bucket}/seeded/bronze`);
    assert.ok(bronze.rows >= exp.rows, `bronze rows ${bronze.rows} < seeded rows ${exp.rows}`);
    assert.ok(Object.keys(bronze.txnVersions).some((k) => k.includes('#seed.')), `no seed txn in ${JSON.stringify(bronze.txnVersions)}`);
    assert.equal(await dynamoItems(`s3://${bucket}/seeded/bronze`), bronze.version + 1);

    // The whole machine again: plan finds the seed on S3; nothing converted or committed.
    const calls2 = [];
    const out2 = await runSeed({ copy, as_of: exp.as_of }, calls2);
    assert.equal(out2.plan.status, 'found');
    assert.equal(out2.plan.seed.lsn, out.plan.seed.lsn);
    assert.deepEqual(calls2, ['Plan', 'Commit', 'Close']);
    assert.equal((await inspect(`s3://${bucket}/seeded/bronze`)).version, bronze.version, 'the rerun committed to bronze');
  } finally {
    await helper.stop();
  }
});
