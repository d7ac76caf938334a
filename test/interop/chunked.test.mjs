// Runs `mssqlcdc demo --bootstrap chunked` and reads what it wrote with DuckDB and the Delta
// log reader written here from the protocol (delta.mjs), none of mssqlcdc's Go code: the
// plans table next to bronze (docs/snapshots.md "The plans table"), bronze and silver. The
// chunk rows the plans table records must match bronze's snapshot rows chunk by chunk, the
// plan must tile the chunks 0..n-1, docs/bronze.md's current-state query over bronze must
// give the demo's table, and silver, applied wave by wave, must hold that query's rows at
// every apply (docs/silver.md § Chunk waves).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import { run, bin, parseSummary } from './demo.mjs';
import { rows, sqlList, dataPath, snapshot } from './delta.mjs';
import { createLiveView, compareSilverVersions } from './silver.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
let dir, lake, conn, instance, summary, out;

before(async () => {
  assert.ok(bin, 'MSSQLCDC_BIN must name the mssqlcdc binary (scripts/test.sh sets it)');
  dir = mkdtempSync(path.join(tmpdir(), 'mssqlcdc-interop-chunked-'));
  lake = path.join(dir, 'lake');
  ({ stdout: out } = await run(bin, ['demo', '--bootstrap', 'chunked', '--lake', lake, '--rows', '3000', '--seconds', '1', '--seed', '11'], { maxBuffer: 16 << 20 }));
  summary = parseSummary(out);
  instance = await DuckDBInstance.create(':memory:');
  conn = await instance.connect();
  // ingestion_facts: docs/bronze.md's query reads the facts table for complete snapshots.
  for (const [view, table] of [['bronze_orders', path.join(lake, 'bronze', 'orders')], ['plans', path.join(lake, 'bronze', 'orders_snapshot_plans')], ['ingestion_facts', path.join(lake, 'facts')]]) {
    const snap = await snapshot(conn, table);
    const files = [...snap.files.values()].map((f) => dataPath(table, f.path));
    assert.ok(files.length > 0, `${table} has live files`);
    await conn.run(`CREATE VIEW ${view} AS SELECT * FROM read_parquet(${sqlList(files)}, union_by_name = true)`);
  }
});
after(() => {
  conn?.closeSync();
  instance?.closeSync();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('the plans table records each chunk bronze holds, with its row count; the plan tiles the chunks', async () => {
  const m = /^chunked: +snapshot (0x[0-9A-F]{20}), (\d+) chunks in the plan/m.exec(out);
  assert.ok(m, out);
  const [s, planned] = [m[1], Number(m[2])];
  const [open] = await rows(conn, `SELECT count(*) AS n, min(snapshot) AS s FROM plans WHERE event = 'open'`);
  assert.equal(Number(open.n), 1);
  assert.equal(open.s, s);
  const plan = await rows(conn, `SELECT chunk, lo, hi, last FROM plans WHERE event = 'plan' AND snapshot = '${s}' ORDER BY chunk`);
  assert.equal(plan.length, planned);
  plan.forEach((r, i) => {
    assert.equal(Number(r.chunk), i);
    assert.equal(r.last, i === plan.length - 1);
    if (i === 0) assert.equal(r.lo, null, 'the first chunk is open below');
    else assert.equal(r.lo, plan[i - 1].hi, `chunk ${i} starts where chunk ${i - 1} ends`);
  });
  const diff = await rows(conn, `
    WITH p AS (SELECT chunk, rows FROM plans WHERE event = 'chunk' AND snapshot = '${s}'),
         b AS (SELECT _chunk AS chunk, count(*) AS rows FROM bronze_orders WHERE _operation = 0 AND _snapshot = '${s}' GROUP BY _chunk)
    SELECT coalesce(p.chunk, b.chunk) AS chunk, p.rows AS recorded, b.rows AS in_bronze
    FROM p FULL JOIN b ON p.chunk = b.chunk
    WHERE p.rows IS DISTINCT FROM b.rows`);
  assert.deepEqual(diff, [], 'chunks whose plans-table rows differ from bronze');
  const [c] = await rows(conn, `SELECT count(*) AS n FROM plans WHERE event = 'chunk' AND snapshot = '${s}'`);
  assert.equal(Number(c.n), planned, 'every planned chunk was read once');
  const [k] = await rows(conn, `SELECT count(*) - count(DISTINCT id) AS twice, count(*) FILTER (WHERE _start_lsn < '${s}') AS below FROM bronze_orders WHERE _operation = 0`);
  assert.equal(Number(k.twice), 0, 'no key read twice');
  assert.equal(Number(k.below), 0, 'no stamp below S');
});

test("docs/bronze.md's current-state query over the chunked bronze gives the demo's table", async () => {
  const doc = readFileSync(path.join(here, '..', '..', 'docs', 'bronze.md'), 'utf8');
  const [sql] = [...doc.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1].trim().replace(/;$/, ''));
  const [r] = await rows(conn, `SELECT count(*) AS n, count(DISTINCT id) AS keys FROM (${sql})`);
  assert.equal(Number(r.n), summary.tableRows);
  assert.equal(Number(r.keys), Number(r.n));
});

test("silver, applied wave by wave, holds docs/bronze.md's current rows at every apply and equals the table once the snapshot is whole", async () => {
  const silver = path.join(lake, 'silver', 'orders');
  const { compared, open } = await compareSilverVersions(conn, silver, path.join(lake, 'bronze', 'orders'));
  assert.ok(open >= 2, `compared ${open} silver versions with the chunked snapshot open`);
  assert.ok(compared > open, `compared ${compared - open} silver versions after the snapshot was whole`);
  const latest = await snapshot(conn, silver);
  await createLiveView(conn, 'silver_orders', silver, latest);
  const [n] = await rows(conn, 'SELECT count(*) AS n FROM silver_orders');
  assert.equal(Number(n.n), summary.silverRows);
  assert.equal(summary.silverRows, summary.tableRows);
});
