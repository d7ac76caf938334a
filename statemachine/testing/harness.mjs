// The harness the statemachine tests share: the bootstrap machine for aws-local-stepfunctions
// with its Tasks bound to a long-lived `mssqlcdc invoke --serve --sim` process, which runs
// the Lambdas' own handlers (functions/snapshot, functions/stream) under aws-lambda-go's
// runtime loop, so outputs and errorTypes are what Lambda returns (docs/handlers.md). It lives
// outside statemachine/test/ because `node --test statemachine/test/` runs every .mjs file
// under a directory named test, not only the *.test.mjs ones.

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

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

const here = path.dirname(fileURLToPath(import.meta.url));

// noWait overrides every Task's retry interval to 0 ms (the bootstrap, recover and seed
// machines).
export const noWait = { Open: 0, Plan: 0, ReadRange: 0, ConvertGroup: 0, Commit: 0, Close: 0, Stream: 0, RecoverOpen: 0, RecoverCommit: 0 };

// bootstrapMachine loads statemachine/bootstrap.asl.json (loadMachine).
export async function bootstrapMachine() {
  return loadMachine('bootstrap.asl.json');
}

// recoverMachine loads statemachine/recover.asl.json the same way.
export async function recoverMachine() {
  return loadMachine('recover.asl.json');
}

// loadMachine loads statemachine/<file> into an aws-local-stepfunctions StateMachine.
// Terraform fills the ${...} Resources with ARNs; the local handlers replace them here. The
// library is imported after the Promise.withResolvers polyfill above.
export async function loadMachine(file) {
  const { StateMachine } = await import('aws-local-stepfunctions');
  const definition = JSON.parse(
    readFileSync(path.join(here, '..', file), 'utf8').replace(
      /\$\{([a-z_]+)\}/g,
      (_, name) => `arn:aws:lambda:us-east-1:123456789012:function:${name}`,
    ),
  );
  return new StateMachine(definition);
}

// startHelper starts one `bin invoke --spec specPath --serve --sim ...extra` process
// (environment env, the parent's when undefined) and returns its client: call(fn, event)
// resolves with the handler's output or rejects with an Error named after its errorType
// (what Retry and Catch match); stop() closes its stdin and resolves when it has exited.
export function startHelper(bin, specPath, extra = [], env = undefined) {
  const proc = spawn(bin, ['invoke', '--spec', specPath, '--serve', '--sim', ...extra], { stdio: ['pipe', 'pipe', 'pipe'], env });
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

// handlers binds every Task state of the bootstrap machine to helper's handler (snapshot
// or stream), appending each state's name to calls as it runs. faults[state] > 0 makes
// that many calls of the state throw a Lambda.ServiceException first (a transient error
// the machine retries).
export function handlers(helper, calls, faults = {}) {
  const bind = binder(helper, calls, faults);
  return {
    Open: bind('Open', 'snapshot'),
    Plan: bind('Plan', 'snapshot'),
    ReadRange: bind('ReadRange', 'snapshot'),
    Commit: bind('Commit', 'snapshot'),
    Close: bind('Close', 'snapshot'),
    Stream: bind('Stream', 'stream'),
  };
}

// recoverHandlers binds every Task state of the recover machine as handlers does.
export function recoverHandlers(helper, calls, faults = {}) {
  const bind = binder(helper, calls, faults);
  return {
    RecoverOpen: bind('RecoverOpen', 'snapshot'),
    Plan: bind('Plan', 'snapshot'),
    ReadRange: bind('ReadRange', 'snapshot'),
    RecoverCommit: bind('RecoverCommit', 'snapshot'),
    Stream: bind('Stream', 'stream'),
  };
}

// binder returns bind(state, fn): a Task handler calling helper's function fn, appending
// the state's name to calls; faults[state] > 0 makes that many calls throw a
// Lambda.ServiceException first (a transient error the machine retries).
function binder(helper, calls, faults) {
  return (state, fn) => async (input) => {
    calls.push(state);
    if (faults[state] > 0) {
      faults[state]--;
      const err = new Error(`injected fault in ${state}`);
      err.name = 'Lambda.ServiceException';
      throw err;
    }
    return helper.call(fn, input);
  };
}

// seedHandlers binds every Task state of the seed machine (statemachine/seed.asl.json) to
// helper's seed (and stream) handler, as handlers does for the bootstrap machine.
export function seedHandlers(helper, calls, faults = {}) {
  const bind = binder(helper, calls, faults);
  return {
    Plan: bind('Plan', 'seed'),
    ConvertGroup: bind('ConvertGroup', 'seed'),
    Commit: bind('Commit', 'seed'),
    Close: bind('Close', 'seed'),
    Stream: bind('Stream', 'stream'),
  };
}
