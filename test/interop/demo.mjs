// Runs `mssqlcdc demo` into a temporary lake and opens its bronze table in DuckDB the
// Delta way (delta.mjs): the view bronze_orders reads exactly the live data files the log
// names. MSSQLCDC_BIN is the binary (scripts/test.sh builds it).

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { sqlList, dataPath, snapshot } from './delta.mjs';

/** run is execFile as a promise of {stdout, stderr}. */
export const run = promisify(execFile);

/** bin is the mssqlcdc binary under test. */
export const bin = process.env.MSSQLCDC_BIN;

/**
 * parseSummary takes the numbers the tests compare with from the demo's closing lines
 * (cmd/mssqlcdc/demo.go printDemoSummary), and fails unless the demo reported OK.
 */
export function parseSummary(out) {
  const grab = (re) => {
    const m = re.exec(out);
    assert.ok(m, `demo output has no line matching ${re}:\n${out}`);
    return Number(m[1]);
  };
  assert.match(out, /^OK: /m, `the demo did not report OK:\n${out}`);
  return {
    keyUpdates: grab(/^workload: .* (\d+) key updates$/m),
    changeRows: grab(/^bronze: +(\d+) change rows/m),
    tableRows: grab(/^rebuild: .*\((\d+) rows\): identical$/m),
    silverRows: grab(/^silver: .*\((\d+) rows, \d+ files, \d+ with a deletion vector\): identical$/m),
  };
}

/**
 * demoLake runs the demo (3,000 rows, a 2 s workload, seed 7; it must exit 0) and returns
 * {dir, summary, bronze, facts, silver, conn, snap, files, close}: dir is a scratch directory
 * removed by close, snap is bronze's latest state read
 * from its log, files the local paths of its live data files, conn a DuckDB connection
 * with the view bronze_orders over them and ingestion_facts over the facts table's. close frees DuckDB and removes the lake.
 */
export async function demoLake() {
  assert.ok(bin, 'MSSQLCDC_BIN must name the mssqlcdc binary (scripts/test.sh sets it)');
  const dir = mkdtempSync(path.join(tmpdir(), 'mssqlcdc-interop-'));
  const lake = path.join(dir, 'lake');
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  const close = () => {
    conn.closeSync();
    instance.closeSync();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const { stdout } = await run(bin, ['demo', '--lake', lake, '--rows', '3000', '--seconds', '2', '--min-batches', '12', '--seed', '7'], { maxBuffer: 16 << 20 });
    const summary = parseSummary(stdout);
    const bronze = path.join(lake, 'bronze', 'orders');
    const snap = await snapshot(conn, bronze);
    const files = [...snap.files.values()].map((f) => dataPath(bronze, f.path));
    assert.ok(files.length > 0, 'bronze has live files');
    await conn.run(`CREATE VIEW bronze_orders AS SELECT * FROM read_parquet(${sqlList(files)}, union_by_name = true)`);
    const facts = path.join(lake, 'facts');
    const fsnap = await snapshot(conn, facts);
    const ffiles = [...fsnap.files.values()].map((f) => dataPath(facts, f.path));
    await conn.run(`CREATE VIEW ingestion_facts AS SELECT * FROM read_parquet(${sqlList(ffiles)}, union_by_name = true)`);
    return { dir, summary, bronze, facts, silver: path.join(lake, 'silver', 'orders'), conn, snap, files, close };
  } catch (err) {
    close();
    throw err;
  }
}
