// Validates every statemachine/*.asl.json with asl-validator and checks the conventions
// every machine follows: each Task retries transient errors with backoff and catches the
// rest into a state that ends in a Fail carrying the error's own name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const aslValidator = require('asl-validator');

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const files = readdirSync(dir).filter((f) => f.endsWith('.asl.json')).sort();

// Terraform fills ${...} placeholders with ARNs; the validator wants an ARN's shape.
export function withPlaceholderArns(def) {
  return JSON.parse(
    JSON.stringify(def).replace(/\$\{([a-z_]+)\}/g, (_, name) => `arn:aws:lambda:us-east-1:123456789012:function:${name}`),
  );
}

function tasks(states, out = []) {
  for (const [name, s] of Object.entries(states)) {
    if (s.Type === 'Task') out.push([name, s]);
    const proc = s.ItemProcessor ?? s.Iterator;
    if (proc) tasks(proc.States, out);
    for (const b of s.Branches ?? []) tasks(b.States, out);
  }
  return out;
}

test('there are state machine definitions', () => {
  assert.ok(files.includes('bootstrap.asl.json'), `found ${files}`);
});

for (const f of files) {
  const def = JSON.parse(readFileSync(path.join(dir, f), 'utf8'));

  test(`${f} is valid ASL`, () => {
    const { isValid, errorsText } = aslValidator(withPlaceholderArns(def), { checkPaths: true, checkArn: true });
    assert.ok(isValid, errorsText('\n'));
  });

  // A Task calls one of our functions (a Terraform placeholder) or, to restart a machine as
  // a new execution before its history fills, Step Functions' own StartExecution.
  const startExecution = 'arn:aws:states:::states:startExecution';

  test(`${f}: Resources are Terraform placeholders`, () => {
    for (const [name, s] of tasks(def.States)) {
      if (s.Resource === startExecution) continue;
      assert.match(s.Resource, /^\$\{[a-z_]+_arn\}$/, `${name}.Resource`);
    }
  });

  test(`${f}: every Task retries transient errors with backoff`, () => {
    for (const [name, s] of tasks(def.States)) {
      const names = (s.Retry ?? []).flatMap((r) => r.ErrorEquals);
      const transient = s.Resource === startExecution
        ? ['StepFunctions.ExecutionLimitExceededException', 'States.Timeout']
        : ['TransientError', 'Lambda.ServiceException', 'Lambda.TooManyRequestsException', 'States.Timeout'];
      for (const e of transient) {
        assert.ok(names.includes(e), `${name} does not retry ${e}`);
      }
      for (const r of s.Retry) {
        assert.ok(r.BackoffRate > 1, `${name}: backoff`);
        assert.ok(r.MaxAttempts >= 2, `${name}: attempts`);
        assert.ok(!r.ErrorEquals.includes('States.ALL'), `${name}: retries everything`);
      }
    }
  });

  test(`${f}: failures are caught, recorded and fail with the error's name`, () => {
    const top = def.States;
    for (const [name, s] of Object.entries(top)) {
      if (!(s.Type === 'Task' || s.Type === 'Map' || s.Type === 'Parallel')) continue;
      const c = (s.Catch ?? []).find((c) => c.ErrorEquals.includes('States.ALL'));
      assert.ok(c, `${name} has no catch-all`);
      const rec = top[c.Next];
      assert.ok(rec && rec.Type === 'Pass', `${name}: catch goes to a recording Pass state`);
      const fail = top[rec.Next];
      assert.equal(fail?.Type, 'Fail', `${name}: the recording state leads to a Fail`);
      assert.ok(fail.ErrorPath, `${name}: the Fail state takes the error's name`);
    }
  });
}
