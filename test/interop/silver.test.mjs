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
import { demoLake } from './demo.mjs';
import { rows, snapshot } from './delta.mjs';
import { deletedRows } from './dv.mjs';
import { createLiveView, compareSilverVersions } from './silver.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, '..', '..');

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

  const { compared, withDVs } = await compareSilverVersions(conn, silver, bronze);
  assert.ok(compared >= 3, `compared ${compared} silver versions`);
  assert.ok(withDVs > 0, 'some silver version had live files with deletion vectors');

  // The latest silver holds the rows the demo counted through deltalog.
  await createLiveView(conn, 'silver_orders', silver, latest);
  const [n] = await rows(conn, 'SELECT count(*) AS n FROM silver_orders');
  assert.equal(Number(n.n), summary.silverRows);
});
