// Reads silver tables with deletion vectors the way another engine would: the Delta log
// replayed by delta.mjs (logical files keyed by path and DV id), each DV decoded by dv.mjs
// from the protocol alone, and DuckDB reading the Parquet files with their row numbers,
// dropping the rows the DVs mark. None of mssqlcdc's Go code is involved. The reader is
// first held to a table Databricks wrote (testdata/delta/table-with-dv-small: rows 0 and
// 9 deleted), then it reads the demo's silver table (docs/silver.md), which must equal the
// current table docs/bronze.md's query derives from the demo's bronze, row by row.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import { readFileSync } from 'node:fs';
import { demoLake } from './demo.mjs';
import { rows, sqlString, sqlList, dataPath, snapshot, replay, commitVersions } from './delta.mjs';
import { deletedRows } from './dv.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, '..', '..');

/**
 * createLiveView makes view name over a table's live rows: each live file read with its
 * file_row_number, the rows its deletion vector marks left out (applyDVs false keeps them,
 * to show what a reader that ignores DVs would return).
 */
async function createLiveView(conn, name, tableDir, snap, { applyDVs = true } = {}) {
  const parts = [];
  for (const f of snap.files.values()) {
    const file = sqlString(dataPath(tableDir, f.path));
    const del = applyDVs && f.deletionVector ? deletedRows(tableDir, f.deletionVector) : [];
    const where = del.length > 0 ? `WHERE file_row_number NOT IN (${del.join(', ')})` : '';
    parts.push(`SELECT * EXCLUDE (file_row_number) FROM read_parquet(${file}, file_row_number = true) ${where}`);
  }
  assert.ok(parts.length > 0, `${tableDir} has live files`);
  await conn.run(`CREATE OR REPLACE VIEW ${name} AS ${parts.join(' UNION ALL BY NAME ')}`);
}

test("the independent DV reader gives Databricks' table-with-dv-small its expected rows", async () => {
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  try {
    const dir = path.join(root, 'testdata', 'delta', 'table-with-dv-small');
    const snap = await snapshot(conn, dir);
    const [f] = [...snap.files.values()];
    assert.equal(f.deletionVector.storageType, 'u');
    assert.deepEqual(deletedRows(dir, f.deletionVector), [0n, 9n]);
    await createLiveView(conn, 'dv_small', dir, snap);
    const got = (await rows(conn, 'SELECT value FROM dv_small ORDER BY value')).map((r) => r.value);
    assert.deepEqual(got, [1, 2, 3, 4, 5, 6, 7, 8]);
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
});

let lake;
before(async () => {
  lake = await demoLake();
});
after(() => lake?.close());

test("the demo's silver at every apply, read with its deletion vectors, is docs/bronze.md's current table at the bronze version it records", async () => {
  const { conn, silver, bronze, summary } = lake;
  const latest = await snapshot(conn, silver);
  // docs/silver.md § Deletion vectors: the protocol lists the feature in both lists.
  assert.equal(latest.protocol.minReaderVersion, 3);
  assert.equal(latest.protocol.minWriterVersion, 7);
  assert.ok(latest.protocol.readerFeatures.includes('deletionVectors'), JSON.stringify(latest.protocol));
  assert.ok(latest.protocol.writerFeatures.includes('deletionVectors'), JSON.stringify(latest.protocol));

  // The current table from bronze, by the query docs/bronze.md prints, over a view of
  // bronze at one version.
  const doc = readFileSync(path.join(root, 'docs', 'bronze.md'), 'utf8');
  const [sql] = [...doc.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1].trim().replace(/;$/, ''));
  const cols = 'id, customer, amount, status, created, _start_lsn, _commit_ts';
  const diff = async (a, b) => Number((await rows(conn, `SELECT count(*) AS n FROM (SELECT ${cols} FROM ${a} EXCEPT ALL SELECT ${cols} FROM ${b})`))[0].n);

  let compared = 0;
  let withDVs = 0;
  for (const v of commitVersions(silver)) {
    // docs/silver.md § Position: userMetadata of every apply commit.
    const info = commitInfo(silver, v);
    const pos = JSON.parse(info.userMetadata);
    if (pos.pass) continue; // a key range of a run in progress
    const snap = replay(silver, { files: new Map() }, 0, v);
    const dvFiles = [...snap.files.values()].filter((f) => f.deletionVector);
    for (const f of dvFiles) assert.match(f.stats, /"tightBounds":false/);
    withDVs += dvFiles.length > 0 ? 1 : 0;
    await createLiveView(conn, 'silver_at', silver, snap);
    const b = replay(bronze, { files: new Map() }, 0, pos.bronze_version);
    await conn.run(`CREATE OR REPLACE VIEW bronze_at AS SELECT * FROM read_parquet(${sqlList([...b.files.values()].map((f) => dataPath(bronze, f.path)))}, union_by_name = true)`);
    await conn.run(`CREATE OR REPLACE VIEW current_at AS ${sql.replaceAll('bronze_orders', 'bronze_at')}`);
    assert.equal(await diff('silver_at', 'current_at'), 0, `silver v${v}: rows that are not bronze v${pos.bronze_version}'s current table`);
    assert.equal(await diff('current_at', 'silver_at'), 0, `silver v${v}: rows of bronze v${pos.bronze_version}'s current table it lacks`);
    const [c] = await rows(conn, 'SELECT count(*) AS n, count(DISTINCT id) AS keys FROM silver_at');
    assert.equal(Number(c.keys), Number(c.n), `silver v${v}: one row per key`);
    if (dvFiles.length > 0) {
      // A reader that ignores the DVs sees replaced and deleted rows.
      await createLiveView(conn, 'silver_raw', silver, snap, { applyDVs: false });
      const [raw] = await rows(conn, 'SELECT count(*) AS n FROM silver_raw');
      const marked = dvFiles.reduce((n, f) => n + Number(f.deletionVector.cardinality), 0);
      assert.equal(Number(raw.n), Number(c.n) + marked, `silver v${v}: rows without the DVs`);
    }
    compared++;
  }
  assert.ok(compared >= 3, `compared ${compared} silver versions`);
  assert.ok(withDVs > 0, 'some silver version had live files with deletion vectors');

  // The latest silver holds the rows the demo counted through deltalog.
  await createLiveView(conn, 'silver_orders', silver, latest);
  const [n] = await rows(conn, 'SELECT count(*) AS n FROM silver_orders');
  assert.equal(Number(n.n), summary.silverRows);
});

/** commitInfo is the commitInfo action of silver's commit v. */
function commitInfo(tableDir, v) {
  const f = path.join(tableDir, '_delta_log', `${String(v).padStart(20, '0')}.json`);
  for (const line of readFileSync(f, 'utf8').split('\n')) {
    if (line.trim() !== '' && JSON.parse(line).commitInfo) return JSON.parse(line).commitInfo;
  }
  throw new Error(`commit ${v} has no commitInfo`);
}
