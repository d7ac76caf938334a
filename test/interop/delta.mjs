// A Delta Lake log reader written from the Delta protocol alone
// (docs/reference/delta-protocol.md), sharing no code with deltalog, so that the interop
// tests check our tables against an independent reading: the JSON commits are parsed here,
// the checkpoint Parquet is read by DuckDB.
//
// It covers what mssqlcdc's tables use: single- and multi-part checkpoints, add and remove
// actions keyed by their decoded path and deletion vector id (dv.mjs reads the DVs; no
// partitions), and the latest metaData and protocol. It is a test helper, not a general
// reader.

import { readdirSync, readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { dvUniqueId } from './dv.mjs';

/** sqlString quotes s as a SQL string literal. */
export function sqlString(s) {
  return `'${String(s).replaceAll("'", "''")}'`;
}

/** sqlList is a SQL list literal of string literals: ['a', 'b']. */
export function sqlList(items) {
  return `[${items.map(sqlString).join(', ')}]`;
}

/** rows runs sql on a DuckDB connection and returns its rows as objects of DuckDB values. */
export async function rows(conn, sql) {
  return (await conn.runAndReadAll(sql)).getRowObjects();
}

/**
 * dataPath turns an add or remove path (docs/reference/delta-protocol.md §2.4: a URI,
 * relative to the table root or absolute) into a local file path.
 */
export function dataPath(tableDir, uriPath) {
  if (/^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(uriPath)) return fileURLToPath(uriPath);
  return path.join(tableDir, decodeURIComponent(uriPath));
}

const commitName = /^(\d{20})\.json$/;

/** commitVersions lists the versions of the JSON commits in _delta_log, ascending. */
export function commitVersions(tableDir) {
  return readdirSync(path.join(tableDir, '_delta_log'))
    .map((n) => commitName.exec(n))
    .filter(Boolean)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);
}

/** lastCheckpoint is _delta_log/_last_checkpoint parsed, or null when there is none. */
export function lastCheckpoint(tableDir) {
  const f = path.join(tableDir, '_delta_log', '_last_checkpoint');
  return existsSync(f) ? JSON.parse(readFileSync(f, 'utf8')) : null;
}

/**
 * checkpointFiles are the Parquet files of the checkpoint at version v
 * (docs/reference/delta-protocol.md §7): <v>.checkpoint.parquet, or parts
 * <v>.checkpoint.<i>.<n>.parquet.
 */
export function checkpointFiles(tableDir, version, parts) {
  const v = String(version).padStart(20, '0');
  const dir = path.join(tableDir, '_delta_log');
  if (!parts) return [path.join(dir, `${v}.checkpoint.parquet`)];
  const n = String(parts).padStart(10, '0');
  return Array.from({ length: parts }, (_, i) => path.join(dir, `${v}.checkpoint.${String(i + 1).padStart(10, '0')}.${n}.parquet`));
}

/**
 * checkpointState reads the checkpoint at version v through DuckDB: its live adds (path ->
 * {path, size, stats}), the metaData's schemaString and the protocol (null when absent),
 * and how many add and metaData rows it holds.
 */
export async function checkpointState(conn, tableDir, version, parts) {
  const list = sqlList(checkpointFiles(tableDir, version, parts));
  const adds = (await conn.runAndReadAll(`SELECT add.path AS path, add.size AS size, add.stats AS stats,
      add.deletionVector AS dv
    FROM read_parquet(${list}, union_by_name = true) WHERE add IS NOT NULL`)).getRowObjectsJson();
  const md = await rows(conn, `SELECT metaData.schemaString AS schema
    FROM read_parquet(${list}, union_by_name = true) WHERE metaData IS NOT NULL`);
  const pr = (await conn.runAndReadAll(`SELECT protocol FROM read_parquet(${list}, union_by_name = true)
    WHERE protocol IS NOT NULL`)).getRowObjectsJson();
  const files = new Map();
  for (const a of adds) {
    const dv = a.dv ?? null;
    files.set(fileKey(a.path, dv), { path: a.path, size: Number(a.size), stats: a.stats, deletionVector: dv });
  }
  return {
    files,
    schemaString: md.length === 1 ? md[0].schema : null,
    protocol: pr.length === 1 ? pr[0].protocol : null,
    addRows: adds.length,
    metaDataRows: md.length,
  };
}

/**
 * fileKey is a logical file's identity (docs/reference/delta-protocol.md §2.6): its decoded
 * path and its deletion vector's unique id.
 */
export function fileKey(uriPath, dv) {
  return `${decodeURIComponent(uriPath)}\u0000${dvUniqueId(dv)}`;
}

/**
 * replay applies the JSON commits from..to (inclusive) to state, in order
 * (docs/reference/delta-protocol.md §9.2): an add makes its logical file (path, DV id)
 * live, a remove drops it, the last metaData and protocol win.
 */
export function replay(tableDir, state, from, to) {
  for (let v = from; v <= to; v++) {
    const f = path.join(tableDir, '_delta_log', `${String(v).padStart(20, '0')}.json`);
    for (const line of readFileSync(f, 'utf8').split('\n')) {
      if (line.trim() === '') continue;
      const action = JSON.parse(line);
      if (action.add) {
        const a = action.add;
        const dv = a.deletionVector ?? null;
        state.files.set(fileKey(a.path, dv), { path: a.path, size: a.size, stats: a.stats, deletionVector: dv });
      } else if (action.remove) {
        state.files.delete(fileKey(action.remove.path, action.remove.deletionVector ?? null));
      } else if (action.metaData) {
        state.schemaString = action.metaData.schemaString;
      } else if (action.protocol) {
        state.protocol = action.protocol;
      }
    }
  }
  return state;
}

/**
 * snapshot is the table's latest state the way a Delta reader builds it: the checkpoint
 * _last_checkpoint names (read by DuckDB), then the commits after it. fromCheckpoint false
 * replays every commit from version 0 instead.
 */
export async function snapshot(conn, tableDir, { fromCheckpoint = true } = {}) {
  const versions = commitVersions(tableDir);
  const latest = versions[versions.length - 1];
  const lc = fromCheckpoint ? lastCheckpoint(tableDir) : null;
  let state = { files: new Map(), schemaString: null, protocol: null };
  let from = 0;
  if (lc) {
    const cp = await checkpointState(conn, tableDir, lc.version, lc.parts);
    state = { files: cp.files, schemaString: cp.schemaString, protocol: cp.protocol };
    from = lc.version + 1;
  }
  replay(tableDir, state, from, latest);
  return { version: latest, checkpoint: lc ? lc.version : null, ...state };
}

/**
 * rawStat is the JSON text of one column's value in a stats section (minValues or
 * maxValues), or undefined: decimals are compared exactly, not through a float.
 * Bronze has no nested columns, so the section is a flat object.
 */
export function rawStat(statsText, section, column) {
  const sec = new RegExp(`"${section}":\\{([^{}]*)\\}`).exec(statsText);
  if (!sec) return undefined;
  const m = new RegExp(`"${column}":(-?[0-9][0-9.eE+-]*)`).exec(sec[1]);
  return m ? m[1] : undefined;
}

/**
 * unscaled is the decimal JSON number text as an integer times 10^scale (a BigInt); it
 * throws when the text holds more digits than the scale allows.
 */
export function unscaled(text, scale) {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([-+]?\d+))?$/.exec(text);
  if (!m) throw new Error(`not a JSON number: ${text}`);
  const [, sign, int, frac = '', exp = '0'] = m;
  let digits = int + frac;
  let shift = scale - frac.length + Number(exp); // digits * 10^shift is the unscaled value
  if (shift < 0) {
    const cut = digits.slice(digits.length + shift);
    if (/[^0]/.test(cut)) throw new Error(`${text} has more than ${scale} decimals`);
    digits = digits.slice(0, digits.length + shift) || '0';
    shift = 0;
  }
  const v = BigInt(digits) * 10n ** BigInt(shift);
  return sign === '-' ? -v : v;
}
