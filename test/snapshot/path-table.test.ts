// PathTable (src/snapshot/path-table.ts), the incremental engine's compact
// per-directory record of tracked paths and stat records, against a plain
// Map model: random index reads, records set, deleted and cleared, in
// directories large enough to merge their tails many times.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PathTable, nameComparisons } from '../../src/snapshot/path-table.js';
import { seededRandom } from '../support/crash-harness.js';

const NAMES = ['a', 'a.b', 'ab', 'a-b', 'b', 'é', 'e\u0301', '名前', '\uDC80raw', 'x'.repeat(40), 'Z', '0', 'a b'];

function randomPath(rnd: () => number): string {
  const dirs = ['', 'd', 'd/e', 'big', 'ä/ö', 'd/e/f'];
  const dir = dirs[Math.floor(rnd() * dirs.length)] as string;
  const base = NAMES[Math.floor(rnd() * NAMES.length)] as string;
  const name = dir === 'big' ? `${base}${Math.floor(rnd() * 400)}` : `${base}${Math.floor(rnd() * 4) || ''}`;
  return dir ? `${dir}/${name}` : name;
}

for (const seed of [1, 2, 3, 4, 5]) {
  test(`PathTable equals a Map model (seed ${seed})`, () => {
    const rnd = seededRandom(seed);
    const table = new PathTable();
    let tracked = new Set<string>();
    const records = new Map<string, number>();
    for (let round = 0; round < 60; round++) {
      const op = rnd();
      if (op < 0.3) {
        // A new index: some paths kept, some dropped, some added, in a random order (the ls-files path) or sorted.
        const next = new Set<string>();
        for (const p of tracked) if (rnd() < 0.8) next.add(p);
        const adds = Math.floor(rnd() * 300);
        for (let i = 0; i < adds; i++) next.add(randomPath(rnd));
        const order = [...next];
        if (rnd() < 0.5) order.sort();
        const changed = new Set<string>();
        table.beginIndexRead();
        for (const p of order) if (table.tracked(p)) changed.add(p);
        if (rnd() < 0.3 && order.length) table.tracked(order[0] as string); // an unmerged entry: twice
        const dirs = table.endIndexRead((p) => changed.add(p));
        const want = new Set<string>([...next].filter((p) => !tracked.has(p)).concat([...tracked].filter((p) => !next.has(p))));
        assert.equal([...changed].sort(), [...want].sort(), `round ${round}: changed`);
        tracked = next;
        const wantDirs = new Set<string>(['']);
        for (const p of tracked)
          for (let d = p.slice(0, Math.max(0, p.lastIndexOf('/'))); !wantDirs.has(d); d = d.slice(0, Math.max(0, d.lastIndexOf('/'))))
            wantDirs.add(d);
        assert.equal([...dirs].sort(), [...wantDirs].sort(), `round ${round}: dirs`);
      } else if (op < 0.75) {
        const n = Math.floor(rnd() * 200);
        for (let i = 0; i < n; i++) {
          const p = rnd() < 0.5 && tracked.size ? ([...tracked][Math.floor(rnd() * tracked.size)] as string) : randomPath(rnd);
          const rec = Math.floor(rnd() * 2 ** 53);
          if (rnd() < 0.5) {
            table.setRecord(p, rec);
            records.set(p, rec);
          } else {
            assert.is(table.recordOrSet(p, rec), records.get(p), `recordOrSet ${p}`);
            if (!records.has(p)) records.set(p, rec);
          }
        }
      } else if (op < 0.95) {
        const keys = [...records.keys()];
        for (let i = 0; i < 50 && keys.length; i++) {
          const p = keys[Math.floor(rnd() * keys.length)] as string;
          table.deleteRecord(p);
          records.delete(p);
        }
        const other = randomPath(rnd);
        table.deleteRecord(other);
        records.delete(other);
      } else {
        table.clearRecords();
        records.clear();
      }
      // Everything the engine asks.
      for (let i = 0; i < 200; i++) {
        const p = randomPath(rnd);
        assert.is(table.isTracked(p), tracked.has(p), `round ${round}: tracked ${p}`);
        assert.is(table.record(p), records.get(p), `round ${round}: record ${p}`);
      }
      for (const p of tracked) assert.ok(table.isTracked(p), p);
      for (const [p, r] of records) assert.is(table.record(p), r, p);
      assert.equal([...table.recordedPaths()].sort(), [...records.keys()].sort(), `round ${round}: recorded paths`);
      assert.is(table.recordCount, records.size);
      // A sweep's cursor, stopped and resumed while records are added (tails merged): every path recorded
      // before and after is given at least once.
      if (round % 5 === 0) {
        const before = new Set(records.keys());
        const cursor = table.recordCursor();
        const seen = new Set<string>();
        for (let k = 0; k < 3; k++) {
          for (let i = 0; i < 40; i++) {
            const p = cursor.next();
            if (p) seen.add(p);
          }
          for (let i = 0; i < 60; i++) {
            const p = randomPath(rnd);
            const rec = Math.floor(rnd() * 2 ** 53);
            table.setRecord(p, rec);
            records.set(p, rec);
          }
        }
        for (let p = cursor.next(); p !== null; p = cursor.next()) seen.add(p);
        for (const p of before) if (records.has(p)) assert.ok(seen.has(p), `round ${round}: the cursor left out ${p}`);
        for (const p of seen) assert.ok(records.has(p), `round ${round}: the cursor gave ${p}, not recorded`);
      }
    }
  });
}

test('one directory of 40k files (the index read, a sweep after a full scan): each name compared with a few others, not with every recent addition', () => {
  // The names as the index lists them (sorted), then the same number of names not tracked (a sweep's records
  // of untracked files after a full scan). A tail searched name by name made the first read of a directory
  // of 100k files take 12.7 s of the server's start (300k: 118 s).
  const n = 40000;
  const table = new PathTable();
  const before = nameComparisons();
  table.beginIndexRead();
  for (let i = 0; i < n; i++) table.tracked(`big/file-${String(i).padStart(7, '0')}.txt`);
  table.endIndexRead(null);
  for (let i = 0; i < n; i++) assert.is(table.recordOrSet(`big/new-${String(i).padStart(7, '0')}.txt`, i), undefined);
  const perName = (nameComparisons() - before) / (2 * n);
  assert.ok(perName < 64, `${perName.toFixed(0)} comparisons a name`);
  assert.ok(table.isTracked('big/file-0012345.txt'));
  assert.is(table.record('big/new-0012345.txt'), 12345);
  assert.is(table.recordCount, n);
});

test.run();
