// Silver read the way another engine would (docs/silver.md): a table's live rows with their
// deletion vectors applied, the position each apply commit records, and docs/bronze.md's
// current-state query. Shared by silver.test.mjs and chunked.test.mjs.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { rows, sqlString, sqlList, dataPath, replay, commitVersions } from './delta.mjs';
import { deletedRows } from './dv.mjs';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * createLiveView makes view name over a table's live rows: each live file read with its
 * file_row_number, the rows its deletion vector marks left out (applyDVs false keeps them,
 * to show what a reader that ignores DVs would return).
 */
export async function createLiveView(conn, name, tableDir, snap, { applyDVs = true } = {}) {
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

/** commitInfo is the commitInfo action of silver's commit v. */
export function commitInfo(tableDir, v) {
  const f = path.join(tableDir, '_delta_log', `${String(v).padStart(20, '0')}.json`);
  for (const line of readFileSync(f, 'utf8').split('\n')) {
    if (line.trim() !== '' && JSON.parse(line).commitInfo) return JSON.parse(line).commitInfo;
  }
  throw new Error(`commit ${v} has no commitInfo`);
}

/** currentStateSQL is docs/bronze.md's current-state query (over bronze_orders). */
export function currentStateSQL() {
  const doc = readFileSync(path.join(root, 'docs', 'bronze.md'), 'utf8');
  const [sql] = [...doc.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1].trim().replace(/;$/, ''));
  return sql;
}

/**
 * compareSilverVersions holds every silver version between runs (its position has no
 * pass) to docs/bronze.md's current table over bronze at the version the position
 * records, row by row, one row per key; a replaced or deleted row is marked in a deletion
 * vector (a reader ignoring the DVs sees it). While a chunked snapshot is open (the
 * position's open_snapshot_lsn) silver holds the keys its waves and the stream brought,
 * no more: each of its rows must be the current table's, not every key of the table. It
 * returns how many versions it compared, how many had DVs and how many had a snapshot
 * open.
 */
export async function compareSilverVersions(conn, silver, bronze) {
  const sql = currentStateSQL();
  const cols = 'id, customer, amount, status, created, _start_lsn, _commit_ts';
  const diff = async (a, b) => Number((await rows(conn, `SELECT count(*) AS n FROM (SELECT ${cols} FROM ${a} EXCEPT ALL SELECT ${cols} FROM ${b})`))[0].n);
  let compared = 0;
  let withDVs = 0;
  let open = 0;
  for (const v of commitVersions(silver)) {
    // docs/silver.md § Position: userMetadata of every apply commit.
    const pos = JSON.parse(commitInfo(silver, v).userMetadata);
    if (pos.pass) continue; // a key range of a run in progress
    const snap = replay(silver, { files: new Map() }, 0, v);
    if (snap.files.size === 0) continue; // nothing applied yet
    const dvFiles = [...snap.files.values()].filter((f) => f.deletionVector);
    for (const f of dvFiles) assert.match(f.stats, /"tightBounds":false/);
    withDVs += dvFiles.length > 0 ? 1 : 0;
    await createLiveView(conn, 'silver_at', silver, snap);
    const b = replay(bronze, { files: new Map() }, 0, pos.bronze_version);
    await conn.run(`CREATE OR REPLACE VIEW bronze_at AS SELECT * FROM read_parquet(${sqlList([...b.files.values()].map((f) => dataPath(bronze, f.path)))}, union_by_name = true)`);
    await conn.run(`CREATE OR REPLACE VIEW current_at AS ${sql.replaceAll('bronze_orders', 'bronze_at')}`);
    assert.equal(await diff('silver_at', 'current_at'), 0, `silver v${v}: rows that are not bronze v${pos.bronze_version}'s current table`);
    if (pos.open_snapshot_lsn) open++;
    else assert.equal(await diff('current_at', 'silver_at'), 0, `silver v${v}: rows of bronze v${pos.bronze_version}'s current table it lacks`);
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
  return { compared, withDVs, open };
}
