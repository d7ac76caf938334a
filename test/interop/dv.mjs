// Deletion vectors read from the Delta protocol alone (docs/reference/delta-protocol.md §2.6,
// docs/delta-reading.md § Deletion vectors), sharing no code with deltalog: the descriptor
// names an inline bitmap (Z85) or a DV file, whose bytes are a RoaringBitmapArray in the
// portable layout. The interop tests use it to read tables with DVs in DuckDB: a file's
// rows are read with their file_row_number and the deleted ones filtered out. A test
// helper, not a general reader: the native layout and absolute paths are refused.

import { readFileSync } from 'node:fs';
import path from 'node:path';

const Z85 = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#';
const z85Value = new Map([...Z85].map((c, i) => [c, i]));

/** z85Decode decodes ZeroMQ's Z85 (RFC 32): each 5 characters are 4 big-endian bytes. */
export function z85Decode(s) {
  if (s.length % 5 !== 0) throw new Error(`Z85 text of length ${s.length} is not a multiple of 5`);
  const out = Buffer.alloc((s.length / 5) * 4);
  for (let i = 0; i < s.length; i += 5) {
    let v = 0;
    for (let j = 0; j < 5; j++) {
      const d = z85Value.get(s[i + j]);
      if (d === undefined) throw new Error(`not a Z85 character: ${s[i + j]}`);
      v = v * 85 + d;
    }
    out.writeUInt32BE(v, (i / 5) * 4);
  }
  return out;
}

/** uuidOf is the canonical text of a 16-byte UUID. */
function uuidOf(b) {
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** dvUniqueId is a descriptor's unique id: storageType + pathOrInlineDv (+ "@" + offset). */
export function dvUniqueId(dv) {
  if (!dv) return '';
  return `${dv.storageType}${dv.pathOrInlineDv}${dv.offset != null ? `@${dv.offset}` : ''}`;
}

/** dvFile is the local path of a storageType "u" DV: <table>/<prefix>/deletion_vector_<uuid>.bin. */
export function dvFile(tableDir, dv) {
  if (dv.storageType !== 'u') throw new Error(`DV storage type ${dv.storageType} has no relative file`);
  const p = dv.pathOrInlineDv;
  const prefix = p.slice(0, p.length - 20);
  const name = `deletion_vector_${uuidOf(z85Decode(p.slice(-20)))}.bin`;
  return prefix ? path.join(tableDir, prefix, name) : path.join(tableDir, name);
}

/** dvBytes are the RoaringBitmapArray bytes a descriptor names. */
export function dvBytes(tableDir, dv) {
  if (dv.storageType === 'i') return z85Decode(dv.pathOrInlineDv).subarray(0, dv.sizeInBytes);
  const data = readFileSync(dvFile(tableDir, dv));
  const off = dv.offset ?? 1;
  if (data[0] !== 1) throw new Error(`DV file version ${data[0]}, want 1`);
  const size = data.readInt32BE(off);
  if (size !== dv.sizeInBytes) throw new Error(`DV size field ${size}, descriptor says ${dv.sizeInBytes}`);
  return data.subarray(off + 4, off + 4 + size);
}

/**
 * decodeRoaringBitmapArray returns the row indexes (ascending, as BigInts) of a
 * RoaringBitmapArray in the portable layout: magic 1681511377, a uint64 bucket count,
 * then per bucket its uint32 high bits and a standard 32-bit portable Roaring bitmap.
 */
export function decodeRoaringBitmapArray(buf) {
  let at = 0;
  const u16 = () => { const v = buf.readUInt16LE(at); at += 2; return v; };
  const u32 = () => { const v = buf.readUInt32LE(at); at += 4; return v; };
  const magic = u32();
  if (magic !== 1681511377) throw new Error(`RoaringBitmapArray magic ${magic}: only the portable layout (1681511377) is read here`);
  const buckets = Number(buf.readBigUInt64LE(at));
  at += 8;
  const out = [];
  for (let b = 0; b < buckets; b++) {
    const high = BigInt(u32()) << 32n;
    const cookie = u32();
    let n;
    let runs = null;
    if ((cookie & 0xffff) === 12347) {
      n = (cookie >>> 16) + 1;
      runs = buf.subarray(at, at + Math.ceil(n / 8));
      at += runs.length;
    } else if (cookie === 12346) {
      n = u32();
    } else {
      throw new Error(`Roaring cookie ${cookie}`);
    }
    const keys = [];
    const cards = [];
    for (let i = 0; i < n; i++) {
      keys.push(u16());
      cards.push(u16() + 1);
    }
    if (runs === null || n >= 4) at += 4 * n; // container offsets
    for (let i = 0; i < n; i++) {
      const base = high | (BigInt(keys[i]) << 16n);
      if (runs !== null && (runs[i >> 3] >> (i & 7)) & 1) {
        const nr = u16();
        for (let r = 0; r < nr; r++) {
          const start = u16();
          const len = u16() + 1;
          for (let k = 0; k < len; k++) out.push(base | BigInt(start + k));
        }
      } else if (cards[i] <= 4096) {
        for (let k = 0; k < cards[i]; k++) out.push(base | BigInt(u16()));
      } else {
        for (let w = 0; w < 1024; w++) {
          let word = buf.readBigUInt64LE(at);
          at += 8;
          for (let bit = 0n; word !== 0n; bit++, word >>= 1n) {
            if (word & 1n) out.push(base | (BigInt(w) * 64n + bit));
          }
        }
      }
    }
  }
  return out;
}

/** deletedRows are the row indexes a descriptor marks deleted, checked against its cardinality. */
export function deletedRows(tableDir, dv) {
  const rows = decodeRoaringBitmapArray(dvBytes(tableDir, dv));
  if (rows.length !== Number(dv.cardinality)) throw new Error(`DV holds ${rows.length} rows, cardinality says ${dv.cardinality}`);
  return rows;
}
