// The peer of the Parquet writer benchmarks (internal/benchmetrics/duckdb.go). Loads the
// Parquet file argv[2] into a DuckDB in-memory table (argv[3], when given, sets DuckDB's
// threads), prints "ready", then for each line "copy <path>" on stdin writes the table with
// COPY ... TO <path> (FORMAT parquet), DuckDB's defaults (Snappy, its own row groups and
// dictionaries), and prints one JSON line: the CPU time of that COPY alone (user + system
// of the whole process, every DuckDB thread: process.cpuUsage around the statement), its
// wall time, the output's size and DuckDB's thread count. It exits at the end of stdin.
import { DuckDBInstance } from '@duckdb/node-api';
import { statSync } from 'node:fs';
import { createInterface } from 'node:readline';

const [input, threadsArg] = process.argv.slice(2);
const quote = (s) => `'${String(s).replaceAll("'", "''")}'`;
const instance = await DuckDBInstance.create(':memory:');
const conn = await instance.connect();
if (threadsArg) await conn.run(`SET threads = ${Number(threadsArg)}`);
await conn.run(`CREATE TABLE t AS SELECT * FROM read_parquet(${quote(input)})`);
const threads = (await conn.runAndReadAll(`SELECT current_setting('threads') AS n`)).getRowObjects()[0].n;
console.log('ready');
for await (const line of createInterface({ input: process.stdin })) {
  const output = line.replace(/^copy /, '');
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  await conn.run(`COPY t TO ${quote(output)} (FORMAT parquet)`);
  const cpu = process.cpuUsage(cpu0);
  console.log(JSON.stringify({
    copy_cpu_s: (cpu.user + cpu.system) / 1e6,
    copy_wall_s: Number(process.hrtime.bigint() - t0) / 1e9,
    bytes: statSync(output).size,
    threads: Number(threads),
  }));
}
