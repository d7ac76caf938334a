// The bootstrap machine's handling of the source's refusals (docs/handlers.md): a database
// that no longer holds the history a stamp or checkpoint was taken on (LSNRewoundError,
// from any step that goes on from a recorded stamp, and from the stream) and a change table
// without __$command_id (CommandIDMissingError, from the stream) are not retried — a retry
// cannot heal them — and fail the execution with their own name, which alarms and callers
// match. The Task handlers here are stand-ins that return canned outputs; the Go handlers'
// tests show the real ones return these names through aws-lambda-go.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { bootstrapMachine, noWait } from '../testing/harness.mjs';

const machine = await bootstrapMachine();

const stamp = { lsn: '0x0000002A000001000088', commit_ts: '2026-10-01T12:00:01.000Z' };
const canned = {
  Open: { status: 'opened', snapshot: stamp, capture_instance: 'dbo_orders' },
  Plan: { numPartitions: 1, keys: [], ranges: [{ index: 0 }] },
  ReadRange: { range: 0, rows: 1, files: 1, bytes: 10 },
  Commit: { version: 0, rows: 1, skipped: false },
  Close: stamp,
  Stream: { caught_up: true, batches: 0, rows: 0, offset: stamp },
};

// run executes the machine with state failing by errorType name; it returns the error the
// execution failed with and how often each state ran.
async function run(state, name) {
  const calls = {};
  const local = {};
  for (const [s, out] of Object.entries(canned)) {
    local[s] = async () => {
      calls[s] = (calls[s] ?? 0) + 1;
      if (s === state) {
        const err = new Error(`${name} from ${s}`);
        err.name = name;
        throw err;
      }
      return out;
    };
  }
  const exec = machine.run({ start_stream: true }, { overrides: { taskResourceLocalHandlers: local, retryIntervalOverrides: noWait } });
  let failure;
  await assert.rejects(exec.result, (err) => {
    failure = err;
    return true;
  });
  return { failure, calls };
}

for (const state of ['Plan', 'ReadRange', 'Commit', 'Stream']) {
  test(`LSNRewoundError from ${state} is not retried and fails the execution by name`, async () => {
    const { failure, calls } = await run(state, 'LSNRewoundError');
    assert.equal(failure.cause?.name ?? failure.name, 'LSNRewoundError', String(failure));
    assert.equal(calls[state], 1, `${state} ran ${calls[state]} times: a rewound history was retried`);
  });
}

test('CommandIDMissingError from the stream is not retried and fails the execution by name', async () => {
  const { failure, calls } = await run('Stream', 'CommandIDMissingError');
  assert.equal(failure.cause?.name ?? failure.name, 'CommandIDMissingError', String(failure));
  assert.equal(calls.Stream, 1);
});

test('a transient error is still retried (the stand-ins reach the end)', async () => {
  let n = 0;
  const local = {};
  for (const [s, out] of Object.entries(canned)) {
    local[s] = async () => {
      if (s === 'ReadRange' && n++ === 0) {
        const err = new Error('replica behind');
        err.name = 'TransientError';
        throw err;
      }
      return out;
    };
  }
  const out = await machine.run({ start_stream: true }, { overrides: { taskResourceLocalHandlers: local, retryIntervalOverrides: noWait } }).result;
  assert.equal(out.stream.caught_up, true);
  assert.equal(n, 2);
});

test('PlanTooLargeError from Plan is not retried and fails the execution by name, before any read', async () => {
  const { failure, calls } = await run('Plan', 'PlanTooLargeError');
  assert.equal(failure.cause?.name ?? failure.name, 'PlanTooLargeError', String(failure));
  assert.equal(calls.Plan, 1, `Plan ran ${calls.Plan} times: a table too large was retried`);
  assert.equal(calls.ReadRange ?? 0, 0);
});
