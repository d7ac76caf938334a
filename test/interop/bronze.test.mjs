// Reads the demo's bronze table with DuckDB and a Delta log reader written here from the
// protocol (delta.mjs, docs/reference/delta-protocol.md), none of mssqlcdc's Go code: the live files, row counts, column
// types, per-file statistics and checkpoints must agree with what the log and
// `mssqlcdc inspect` say about the table.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { demoLake, run, bin } from './demo.mjs';
import { sqlString, sqlList, checkpointFiles, rows, dataPath, snapshot, lastCheckpoint, checkpointState, replay, rawStat, unscaled } from './delta.mjs';

let lake; // the demo's tables, read through DuckDB (demo.mjs)

before(async () => {
  lake = await demoLake();
});
after(() => lake?.close());

// duckType is the DuckDB type a Parquet reader should see for a Delta primitive type
// (docs/reference/delta-protocol.md §5.1).
function duckType(deltaType) {
  const dec = /^decimal\((\d+),(\d+)\)$/.exec(deltaType);
  if (dec) return `DECIMAL(${dec[1]},${dec[2]})`;
  const m = {
    string: 'VARCHAR', long: 'BIGINT', integer: 'INTEGER', short: 'SMALLINT', byte: 'TINYINT',
    float: 'FLOAT', double: 'DOUBLE', boolean: 'BOOLEAN', binary: 'BLOB', date: 'DATE',
    timestamp: 'TIMESTAMP WITH TIME ZONE', timestamp_ntz: 'TIMESTAMP',
  }[deltaType];
  assert.ok(m, `no DuckDB type known for Delta type ${JSON.stringify(deltaType)}`);
  return m;
}

test('the live files DuckDB reads hold the rows the log and mssqlcdc inspect count', async () => {
  const { conn, bronze, snap } = lake;
  assert.ok(snap.checkpoint !== null, 'the demo wrote a checkpoint, so the checkpoint path is exercised');
  // The checkpoint plus the commits after it names the same files as all the commits.
  const full = await snapshot(conn, bronze, { fromCheckpoint: false });
  assert.deepEqual([...snap.files.keys()].sort(), [...full.files.keys()].sort());

  const statRows = [...snap.files.values()].reduce((n, f) => n + JSON.parse(f.stats).numRecords, 0);
  const [{ n }] = await rows(conn, 'SELECT count(*) AS n FROM bronze_orders');
  assert.equal(Number(n), statRows);

  const { stdout } = await run(bin, ['inspect', bronze, '--json']);
  const rep = JSON.parse(stdout);
  assert.equal(rep.rows, statRows);
  assert.equal(rep.version, snap.version);
  assert.equal(rep.liveFiles, snap.files.size);

  // Snapshot rows (0) plus the change rows the demo counted in the source's change table.
  const [{ changes }] = await rows(conn, 'SELECT count(*) AS changes FROM bronze_orders WHERE _operation <> 0');
  assert.equal(Number(changes), lake.summary.changeRows);
});

test('DuckDB sees the bronze contract of docs/bronze.md: protocol, column order and types', async () => {
  const { conn, snap } = lake;
  // docs/bronze.md § Readers: reader 3 / writer 7 with the timestampNtz feature.
  assert.deepEqual(snap.protocol, { minReaderVersion: 3, minWriterVersion: 7, readerFeatures: ['timestampNtz'], writerFeatures: ['timestampNtz'] });
  const described = await rows(conn, 'DESCRIBE SELECT * FROM bronze_orders');
  const got = described.map((r) => [r.column_name, r.column_type]);
  const schema = JSON.parse(snap.schemaString);
  assert.deepEqual(got, schema.fields.map((f) => [f.name, duckType(f.type)]));
  const byName = Object.fromEntries(got);
  // The metadata and writer columns as docs/bronze.md lists them; the demo's captured
  // columns as docs/spec.md maps them (int, decimal(18,2), datetime2, nvarchar).
  const contract = {
    _capture_instance: 'VARCHAR', _start_lsn: 'VARCHAR', _seqval: 'VARCHAR', _operation: 'INTEGER',
    _command_id: 'INTEGER', _commit_ts: 'TIMESTAMP', _batch_id: 'BIGINT', _snapshot: 'VARCHAR',
    _chunk: 'INTEGER', id: 'INTEGER', amount: 'DECIMAL(18,2)', created: 'TIMESTAMP', customer: 'VARCHAR',
  };
  for (const [col, type] of Object.entries(contract)) assert.equal(byName[col], type, col);
  assert.deepEqual(got.slice(0, 6).map(([c]) => c), ['_capture_instance', '_start_lsn', '_seqval', '_operation', '_command_id', '_commit_ts']);
  assert.deepEqual(got.slice(-3).map(([c]) => c), ['_batch_id', '_snapshot', '_chunk']);
});

test('no change is in bronze twice: (_start_lsn, _seqval, _operation) is unique among change rows', async () => {
  const { conn } = lake;
  const dups = await rows(conn, `SELECT _start_lsn, _seqval, _operation, count(*) AS n FROM bronze_orders
    WHERE _operation <> 0 GROUP BY ALL HAVING count(*) > 1 LIMIT 5`);
  assert.deepEqual(dups, []);
  const [{ bad }] = await rows(conn, `SELECT count(*) AS bad FROM bronze_orders
    WHERE _operation NOT IN (0, 1, 2, 3, 4) OR _start_lsn IS NULL OR NOT regexp_full_match(_start_lsn, '0x[0-9A-F]{20}')
       OR (_operation = 0) <> (_seqval IS NULL) OR (_operation = 0) <> (_batch_id IS NULL)`);
  assert.equal(Number(bad), 0);
});

// ts renders a timestamp column's min or max as our statistics write it: at millisecond
// precision, the min floored and the max ceiled (so they bound the data for readers that do
// not add Spark's 1 ms to a max), yyyy-MM-ddTHH:mm:ss.SSS without a zone for timestamp_ntz.
const ts = (agg, col) => agg === 'min'
  ? `strftime(date_trunc('millisecond', min(${col})), '%Y-%m-%dT%H:%M:%S.%g')`
  : `strftime(date_trunc('millisecond', max(${col}) + INTERVAL 999 MICROSECOND), '%Y-%m-%dT%H:%M:%S.%g')`;

test('per-file statistics in the log equal what DuckDB computes from each file', async () => {
  const { conn, bronze, snap } = lake;
  const columns = ['_start_lsn', '_operation', 'id', 'amount', 'created', '_commit_ts'];
  let withCommitTs = 0;
  for (const f of snap.files.values()) {
    const stats = JSON.parse(f.stats);
    const [r] = await rows(conn, `SELECT count(*) AS n,
        min(_start_lsn) AS min__start_lsn, max(_start_lsn) AS max__start_lsn,
        min(_operation) AS min__operation, max(_operation) AS max__operation,
        min(id) AS min_id, max(id) AS max_id,
        min(amount) AS min_amount, max(amount) AS max_amount,
        ${ts('min', 'created')} AS min_created, ${ts('max', 'created')} AS max_created,
        ${ts('min', '_commit_ts')} AS min__commit_ts, ${ts('max', '_commit_ts')} AS max__commit_ts,
        ${columns.map((c) => `count(*) - count(${c}) AS nulls_${c}`).join(', ')}
      FROM read_parquet(${sqlString(dataPath(bronze, f.path))})`);
    assert.equal(Number(r.n), stats.numRecords, f.path);
    for (const c of columns) {
      assert.equal(Number(r[`nulls_${c}`]), stats.nullCount[c], `${f.path} nullCount.${c}`);
      for (const [agg, section] of [['min', 'minValues'], ['max', 'maxValues']]) {
        const duck = r[`${agg}_${c}`];
        const where = `${f.path} ${section}.${c}`;
        if (duck === null) {
          assert.equal(stats[section]?.[c], undefined, `${where}: an all-NULL column has no ${section}`);
        } else if (c === 'amount') {
          // DECIMAL(18,2): the log's JSON number, read exactly, against DuckDB's unscaled value.
          const text = rawStat(f.stats, section, c);
          assert.ok(text !== undefined, `${where} is missing`);
          assert.equal(unscaled(text, duck.scale), duck.value, where);
        } else {
          assert.equal(stats[section]?.[c], duck, where);
        }
      }
    }
    if (r.min__commit_ts !== null) withCommitTs++;
  }
  assert.ok(withCommitTs > 0, 'some file holds change rows with a _commit_ts');
});

test('timestamp statistics bound the data as written, for a reader that adds nothing to a max', async () => {
  // A reader that prunes with `value <= maxValues` taken literally (no Spark +1 ms) must
  // find every row: DuckDB checks each file's rows against the log's bounds.
  const { conn, bronze, snap } = lake;
  let subMillisecond = 0;
  for (const f of snap.files.values()) {
    const stats = JSON.parse(f.stats);
    for (const c of ['created', '_commit_ts']) {
      const lo = stats.minValues?.[c];
      const hi = stats.maxValues?.[c];
      if (lo === undefined || hi === undefined) continue;
      const [r] = await rows(conn, `SELECT count(*) FILTER (WHERE ${c} < CAST(${sqlString(lo)} AS TIMESTAMP)) AS below,
          count(*) FILTER (WHERE ${c} > CAST(${sqlString(hi)} AS TIMESTAMP)) AS above,
          count(*) FILTER (WHERE microsecond(${c}) % 1000 <> 0) AS sub_ms
        FROM read_parquet(${sqlString(dataPath(bronze, f.path))})`);
      assert.equal(Number(r.below), 0, `${f.path}: rows of ${c} below minValues ${lo}`);
      assert.equal(Number(r.above), 0, `${f.path}: rows of ${c} above maxValues ${hi}`);
      subMillisecond += Number(r.sub_ms);
    }
  }
  assert.ok(subMillisecond > 0, 'the demo wrote timestamps with sub-millisecond parts, so the check can fail');
});

test('DuckDB finds in each checkpoint as many adds as _last_checkpoint and the commits say', async () => {
  for (const table of [lake.bronze, lake.facts]) {
    const lc = lastCheckpoint(table);
    assert.ok(lc, `${table} has a _last_checkpoint`);
    const cp = await checkpointState(lake.conn, table, lc.version, lc.parts);
    assert.equal(cp.addRows, lc.numOfAddFiles, `${table}: add rows in the checkpoint`);
    assert.equal(cp.metaDataRows, 1, `${table}: one metaData row`);
    // The adds the commits 0..version leave live, replayed without the checkpoint.
    const replayed = replay(table, { files: new Map() }, 0, lc.version);
    assert.deepEqual([...cp.files.keys()].sort(), [...replayed.files.keys()].sort(), table);
    for (const [p, f] of replayed.files) assert.deepEqual(JSON.parse(cp.files.get(p).stats), JSON.parse(f.stats), `${table} ${p}: stats`);
    const [{ n }] = await rows(lake.conn, `SELECT count(*) AS n FROM read_parquet(${sqlList(checkpointFiles(table, lc.version, lc.parts))})`);
    assert.equal(Number(n), lc.size, `${table}: actions in the checkpoint`);
  }
});
