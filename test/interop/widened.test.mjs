// Reads a bronze table whose columns the stream widened in place (Delta's type widening,
// docs/stream.md "Schema changes") with DuckDB and the Delta log reader written here from
// the protocol (delta.mjs), none of mssqlcdc's Go code: the Go helper widenedbronze writes
// the table (its doc lists the rows). DuckDB's own Delta extension is not available
// offline, so the test does what a Delta reader does (docs/reference/delta-protocol.md
// §6.6, typeWidening): it takes the live files from the log and up-casts each file's columns to
// the table's current types. Both the files written before the widening (narrow Parquet
// types) and after (wide ones) must read back the values the source held.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import { run } from './demo.mjs';
import { rows, sqlString, sqlList, dataPath, snapshot, commitVersions } from './delta.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

let dir, instance, conn, bronze, snap, files;
before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'mssqlcdc-widened-'));
  const helper = path.join(dir, 'widenedbronze');
  await run('go', ['build', '-o', helper, './test/interop/widenedbronze'], { cwd: path.join(here, '..', '..') });
  const { stdout } = await run(helper, [path.join(dir, 'lake')]);
  bronze = JSON.parse(stdout).bronze;
  instance = await DuckDBInstance.create(':memory:');
  conn = await instance.connect();
  snap = await snapshot(conn, bronze);
  files = [...snap.files.values()].map((f) => dataPath(bronze, f.path));
});
after(() => {
  conn?.closeSync();
  instance?.closeSync();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// widened are the columns widened: Delta type before and after, and the DuckDB type of
// each (integer INTEGER, long BIGINT, ...).
const widened = {
  qty: { from: 'integer', to: 'long', narrow: 'INTEGER', wide: 'BIGINT' },
  small: { from: 'short', to: 'integer', narrow: 'SMALLINT', wide: 'INTEGER' },
  amount: { from: 'decimal(9,2)', to: 'decimal(12,4)', narrow: 'DECIMAL(9,2)', wide: 'DECIMAL(12,4)' },
  ratio: { from: 'float', to: 'double', narrow: 'FLOAT', wide: 'DOUBLE' },
  day: { from: 'date', to: 'timestamp_ntz', narrow: 'DATE', wide: 'TIMESTAMP' },
};

test('the log declares the widening as the Delta protocol says: typeWidening feature, delta.typeChanges, the property', () => {
  // Reader 3 / writer 7 with typeWidening among both feature lists (a reader-writer
  // feature, docs/reference/delta-protocol.md §6.6), beside bronze's timestampNtz.
  assert.equal(snap.protocol.minReaderVersion, 3);
  assert.equal(snap.protocol.minWriterVersion, 7);
  assert.deepEqual([...snap.protocol.readerFeatures].sort(), ['timestampNtz', 'typeWidening']);
  assert.deepEqual([...snap.protocol.writerFeatures].sort(), ['timestampNtz', 'typeWidening']);
  const fields = Object.fromEntries(JSON.parse(snap.schemaString).fields.map((f) => [f.name, f]));
  for (const [col, w] of Object.entries(widened)) {
    assert.equal(fields[col].type, w.to, `${col}'s type`);
    assert.deepEqual(fields[col].metadata['delta.typeChanges'], [{ fromType: w.from, toType: w.to }], `${col}'s delta.typeChanges`);
  }
  assert.equal(fields.id.metadata?.['delta.typeChanges'], undefined, 'id was not widened');
  // The last metaData's configuration keeps delta.enableTypeWidening.
  let conf = null;
  for (const v of commitVersions(bronze)) {
    for (const line of readFileSync(path.join(bronze, '_delta_log', `${String(v).padStart(20, '0')}.json`), 'utf8').split('\n')) {
      if (line.trim() !== '' && JSON.parse(line).metaData) conf = JSON.parse(line).metaData.configuration;
    }
  }
  assert.equal(conf['delta.enableTypeWidening'], 'true');
});

test('DuckDB reads the files written before the widening in the narrow types and those after in the wide ones', async () => {
  const kinds = { narrow: 0, wide: 0 };
  for (const f of files) {
    const types = Object.fromEntries((await rows(conn, `DESCRIBE SELECT * FROM read_parquet(${sqlString(f)})`)).map((r) => [r.column_name, r.column_type]));
    const kind = types.qty === 'BIGINT' ? 'wide' : 'narrow';
    kinds[kind]++;
    for (const [col, w] of Object.entries(widened)) assert.equal(types[col], w[kind], `${col} in a ${kind} file ${f}`);
  }
  assert.ok(kinds.narrow > 0 && kinds.wide > 0, `live files: ${JSON.stringify(kinds)}, want both narrow and wide`);
});

// upcast is the SELECT list that reads one file in the table's current types, as a Delta
// reader must for a widened column.
const upcast = `id, _operation, CAST(qty AS BIGINT) AS qty, CAST(small AS INTEGER) AS small,
  CAST(amount AS DECIMAL(12,4))::VARCHAR AS amount, CAST(ratio AS DOUBLE) AS ratio, CAST(day AS TIMESTAMP)::VARCHAR AS day`;

// want are bronze's rows, in (id, _operation) order: the inserts of 1 and 2 before the
// widening, the insert of 3 and the update of 1 (before and after images) after.
const want = [
  { id: 1, _operation: 2, qty: 2147483647n, small: 7, amount: '1234567.8900', ratio: 1.5, day: '2024-03-01 00:00:00' },
  { id: 1, _operation: 3, qty: 2147483647n, small: 7, amount: '1234567.8900', ratio: 1.5, day: '2024-03-01 00:00:00' },
  { id: 1, _operation: 4, qty: 2147483647n, small: 7, amount: '1234567.8900', ratio: 2.25, day: '2024-03-01 00:00:00' },
  { id: 2, _operation: 2, qty: -1n, small: null, amount: '-0.0100', ratio: null, day: null },
  { id: 3, _operation: 2, qty: 1099511627776n, small: 100000, amount: '12345678.1234', ratio: 1e300, day: '2024-03-02 10:11:12.5' },
];

test('every file, up-cast to the table types, gives the source values, old rows and new', async () => {
  const got = [];
  for (const f of files) got.push(...(await rows(conn, `SELECT ${upcast} FROM read_parquet(${sqlString(f)})`)));
  got.sort((a, b) => a.id - b.id || a._operation - b._operation);
  assert.deepEqual(got, want);
});

test('DuckDB reading every live file at once (union_by_name) widens the narrow ones itself to the same values', async () => {
  const described = await rows(conn, `DESCRIBE SELECT * FROM read_parquet(${sqlList(files)}, union_by_name = true)`);
  const types = Object.fromEntries(described.map((r) => [r.column_name, r.column_type]));
  for (const [col, w] of Object.entries(widened)) assert.equal(types[col], w.wide, col);
  const got = await rows(conn, `SELECT ${upcast} FROM read_parquet(${sqlList(files)}, union_by_name = true) ORDER BY id, _operation`);
  assert.deepEqual(got, want);
});
