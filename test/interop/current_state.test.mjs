// Runs the current-state query of docs/bronze.md, as printed there, in DuckDB over the
// demo's bronze table (the view bronze_orders the query names, demo.mjs): it must give,
// row by row, the table core/rebuild derives from the same bronze (printed by the Go
// helper rebuildstate), which the demo compared with the simulator's table; and as many
// rows as the demo counted. The query the page warns against, which skips before-images
// (3) instead of ranking them, must give a different, wrong answer, since the demo's
// workload updates keys.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { demoLake, run } from './demo.mjs';
import { rows, sqlString } from './delta.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const doc = readFileSync(path.join(here, '..', '..', 'docs', 'bronze.md'), 'utf8');

// docTarget is the bronze URL the query of docs/bronze.md filters the facts rows on.
const docTarget = "'s3://my-lake/bronze/orders'";

// currentStateSQL is the one ```sql block of docs/bronze.md, with the demo's bronze
// location as the facts rows' target (the demo writes the spec's path there).
function currentStateSQL() {
  const blocks = [...doc.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.equal(blocks.length, 1, 'docs/bronze.md has one SQL block');
  assert.ok(blocks[0].includes(docTarget), `the query filters the facts on ${docTarget}`);
  return blocks[0].trim().replace(/;$/, '').replace(docTarget, sqlString(lake.bronze));
}

let lake;
let rebuilt; // newline-delimited JSON of core/rebuild's table, one object per row
before(async () => {
  lake = await demoLake();
  const helper = path.join(lake.dir, 'rebuildstate');
  await run('go', ['build', '-o', helper, './test/interop/rebuildstate'], { cwd: path.join(here, '..', '..') });
  rebuilt = path.join(lake.dir, 'rebuilt.jsonl');
  const { stdout } = await run(helper, [lake.bronze, 'id'], { maxBuffer: 64 << 20 });
  writeFileSync(rebuilt, stdout);
});
after(() => lake?.close());

test("docs/bronze.md's current-state query gives the demo's table", async () => {
  const sql = currentStateSQL();
  assert.match(sql, /FROM bronze_orders\n\s*WHERE _start_lsn >= \(SELECT s FROM newest\)\)/, 'the query ranks bronze_orders from the newest snapshot on');
  const [r] = await rows(lake.conn, `SELECT count(*) AS n, count(DISTINCT id) AS keys, count(id) AS ids,
      count(*) FILTER (WHERE _operation NOT IN (0, 2, 4)) AS gone
    FROM (${sql})`);
  assert.equal(Number(r.n), lake.summary.tableRows, 'rows of the rebuilt table, as the demo counted them');
  assert.equal(Number(r.keys), Number(r.n), 'one row per key');
  assert.equal(Number(r.ids), Number(r.n), 'no NULL key');
  assert.equal(Number(r.gone), 0);
  // The facts half of the rebuild point finds the demo's bootstrap row by its target, at
  // the LSN of the snapshot in bronze.
  const [f] = await rows(lake.conn, `SELECT count(*) AS n, max(max_lsn) AS s,
      (SELECT max(_snapshot) FROM bronze_orders WHERE _operation = 0) AS b
    FROM ingestion_facts WHERE event IN ('bootstrap', 'resnapshot') AND target = ${sqlString(lake.bronze)}`);
  assert.equal(Number(f.n), 1, 'one bootstrap row of the demo\'s bronze');
  assert.equal(f.s, f.b);
});

test("docs/bronze.md's current-state query gives core/rebuild's table, row by row", async () => {
  const types = Object.fromEntries((await rows(lake.conn, 'DESCRIBE SELECT * FROM bronze_orders')).map((d) => [d.column_name, d.column_type]));
  const [first] = readFileSync(rebuilt, 'utf8').split('\n');
  const columns = Object.keys(JSON.parse(first)).sort();
  assert.deepEqual(columns, ['amount', 'created', 'customer', 'id', 'status']);
  // rebuild holds values as text: cast each back to the type DuckDB reads from bronze.
  const typed = columns.map((c) => `CAST(${c} AS ${types[c]}) AS ${c}`).join(', ');
  const json = `read_json(${sqlString(rebuilt)}, format = 'newline_delimited',
    columns = {${columns.map((c) => `${c}: 'VARCHAR'`).join(', ')}})`;
  const same = columns.map((c) => `d.${c} IS NOT DISTINCT FROM r.${c}`).join(' AND ');
  const [r] = await rows(lake.conn, `WITH doc AS (${currentStateSQL()}), reb AS (SELECT ${typed} FROM ${json})
    SELECT (SELECT count(*) FROM reb) AS n,
           (SELECT count(*) FROM doc d FULL JOIN reb r ON d.id = r.id
             WHERE d.id IS NULL OR r.id IS NULL OR NOT (${same})) AS differ`);
  assert.equal(Number(r.n), lake.summary.tableRows);
  assert.equal(Number(r.differ), 0, 'rows that differ between the query and core/rebuild');
});

test('skipping before-images instead of ranking them keeps keys a key update moved away', async () => {
  assert.ok(lake.summary.keyUpdates > 0, 'the workload updated keys');
  const sql = currentStateSQL();
  const skipping = sql.replace('WHERE _start_lsn >= (SELECT s FROM newest))', 'WHERE _start_lsn >= (SELECT s FROM newest) AND _operation <> 3)');
  assert.notEqual(skipping, sql);
  const [r] = await rows(lake.conn, `WITH good AS (${sql}), bad AS (${skipping}),
      last AS (SELECT id, arg_max(_operation, (_start_lsn, coalesce(_command_id, -1), coalesce(_seqval, ''), _operation)) AS op
               FROM bronze_orders GROUP BY id)
    SELECT (SELECT count(*) FROM bad) AS n,
           (SELECT count(*) FROM last WHERE op = 3) AS moved,
           (SELECT count(*) FROM bad ANTI JOIN good USING (id)) AS extra,
           (SELECT count(*) FROM bad ANTI JOIN good USING (id) JOIN last USING (id) WHERE last.op <> 3) AS extra_not_moved,
           (SELECT count(*) FROM good g ANTI JOIN bad b ON g.id = b.id AND g._start_lsn = b._start_lsn
              AND g._seqval IS NOT DISTINCT FROM b._seqval AND g._operation = b._operation) AS lost`);
  assert.ok(Number(r.moved) > 0, 'some key ends in a before-image');
  assert.notEqual(Number(r.n), lake.summary.tableRows, 'the skipping query gives another table');
  assert.equal(Number(r.n), lake.summary.tableRows + Number(r.extra));
  assert.ok(Number(r.extra) > 0, 'the skipping query keeps moved keys');
  // Its extra rows are keys whose latest row is a before-image, and only those (a key moved
  // away before the snapshot read it has no earlier image to bring back); it loses nothing.
  assert.ok(Number(r.extra) <= Number(r.moved));
  assert.equal(Number(r.extra_not_moved), 0);
  assert.equal(Number(r.lost), 0);
});
