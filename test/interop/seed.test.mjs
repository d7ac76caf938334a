// Runs `mssqlcdc demo --bootstrap seed` and reads its bronze table with DuckDB and the
// Delta log reader written here from the protocol (delta.mjs), none of mssqlcdc's Go code.
// The demo exports its copy zstd-compressed and the seed copies the column chunks bronze
// takes as they are (docs/seed.md § Conversion), so bronze's files mix zstd chunks with
// Snappy ones: DuckDB must read every one of them, the seed's snapshot rows must be the
// copy's rows, and docs/bronze.md's current-state query must give the demo's table.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import { run, bin, parseSummary } from './demo.mjs';
import { rows, sqlList, dataPath, snapshot } from './delta.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
let dir, lake, conn, instance, summary, files, copyFiles;

before(async () => {
  assert.ok(bin, 'MSSQLCDC_BIN must name the mssqlcdc binary (scripts/test.sh sets it)');
  dir = mkdtempSync(path.join(tmpdir(), 'mssqlcdc-interop-seed-'));
  lake = path.join(dir, 'lake');
  const { stdout } = await run(bin, ['demo', '--bootstrap', 'seed', '--lake', lake, '--rows', '3000', '--seconds', '1', '--seed', '13'], { maxBuffer: 16 << 20 });
  summary = parseSummary(stdout);
  instance = await DuckDBInstance.create(':memory:');
  conn = await instance.connect();
  for (const [view, table] of [['bronze_orders', path.join(lake, 'bronze', 'orders')], ['ingestion_facts', path.join(lake, 'facts')]]) {
    const snap = await snapshot(conn, table);
    const live = [...snap.files.values()].map((f) => dataPath(table, f.path));
    assert.ok(live.length > 0, `${table} has live files`);
    if (view === 'bronze_orders') files = live;
    await conn.run(`CREATE VIEW ${view} AS SELECT * FROM read_parquet(${sqlList(live)}, union_by_name = true)`);
  }
  const copy = path.join(lake, 'copy', 'orders');
  copyFiles = readdirSync(copy).filter((f) => f.endsWith('.parquet')).map((f) => path.join(copy, f));
  assert.ok(copyFiles.length > 0, 'the demo exported its copy');
});
after(() => {
  conn?.closeSync();
  instance?.closeSync();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("bronze's seeded files mix the copy's zstd chunks with Snappy ones, and DuckDB reads them all", async () => {
  const codecs = await rows(conn, `SELECT DISTINCT compression FROM parquet_metadata(${sqlList(files)}) ORDER BY 1`);
  const names = codecs.map((r) => String(r.compression).toUpperCase());
  assert.ok(names.includes('ZSTD'), `codecs in bronze: ${names}`);
  assert.ok(names.includes('SNAPPY'), `codecs in bronze: ${names}`);
  // The seed's rows are the copy's rows, value for value, in every column the copy has.
  const cols = (await rows(conn, `SELECT name FROM parquet_schema(${sqlList([copyFiles[0]])}) WHERE num_children IS NULL`)).map((r) => r.name);
  assert.ok(cols.includes('id') && cols.length > 3, `copy columns: ${cols}`);
  const list = cols.map((c) => `"${c}"`).join(', ');
  const diff = await rows(conn, `
    SELECT count(*) AS n FROM (
      (SELECT ${list} FROM read_parquet(${sqlList(copyFiles)}) EXCEPT ALL SELECT ${list} FROM bronze_orders WHERE _operation = 0)
      UNION ALL
      (SELECT ${list} FROM bronze_orders WHERE _operation = 0 EXCEPT ALL SELECT ${list} FROM read_parquet(${sqlList(copyFiles)})))`);
  assert.equal(Number(diff[0].n), 0, 'rows in the copy or the seed and not in the other');
});

test("docs/bronze.md's current-state query over the seeded bronze gives the demo's table", async () => {
  const doc = readFileSync(path.join(here, '..', '..', 'docs', 'bronze.md'), 'utf8');
  const [sql] = [...doc.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1].trim().replace(/;$/, ''));
  const [r] = await rows(conn, `SELECT count(*) AS n, count(DISTINCT id) AS keys FROM (${sql})`);
  assert.equal(Number(r.n), summary.tableRows);
  assert.equal(Number(r.keys), Number(r.n));
});
