// The journal is the truth: crash-tolerant reading, torn-tail repair, 0600,
// and state.json / refs rebuilt from it.
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cli, refsUnder, tempRepo } from '../support/helpers.js';
import { gitCommonDir, journalEvents, journalFile, snapJson } from '../support/snap-helpers.js';
import { appendEvent, eventBase, readJournal } from '../../src/session/journal.js';

function stateFile(repo: Parameters<typeof gitCommonDir>[0], session: string): string {
  return path.join(gitCommonDir(repo), 'agentsnap', 'sessions', session, 'state.json');
}

test('readJournal: a torn last line is ignored; appendEvent cuts it before writing', () => {
  const repo = tempRepo({ noInit: true });
  try {
    const file = path.join(repo.base, 'journal.jsonl');
    appendEvent(file, { ...eventBase('s1'), type: 'custom.one' });
    appendEvent(file, { ...eventBase('s1'), type: 'custom.two' });
    assert.is(fs.statSync(file).mode & 0o777, 0o600);
    fs.appendFileSync(file, '{"v":1,"type":"custom.thr'); // writer killed mid-line
    let read = readJournal(file);
    assert.equal(
      read.unknownEvents.map((e) => e.type),
      ['custom.one', 'custom.two'],
    );
    assert.ok(read.tornTail);
    // A complete JSON object without its newline is not committed either.
    fs.appendFileSync(file, 'ee"}');
    read = readJournal(file);
    assert.equal(
      read.unknownEvents.map((e) => e.type),
      ['custom.one', 'custom.two'],
    );
    appendEvent(file, { ...eventBase('s1'), type: 'custom.four' });
    read = readJournal(file);
    assert.equal(
      read.unknownEvents.map((e) => e.type),
      ['custom.one', 'custom.two', 'custom.four'],
    );
    assert.not.ok(read.tornTail);
    assert.equal(read.corruptLines, []);
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    assert.is(lines.length, 4);
    assert.is(lines[3], '');
    // A torn tail with no newline at all in the file: truncated to empty, then appended.
    const file2 = path.join(repo.base, 'j2.jsonl');
    fs.writeFileSync(file2, '{"half', { mode: 0o600 });
    appendEvent(file2, { ...eventBase('s1'), type: 'custom.only' });
    assert.equal(
      readJournal(file2).unknownEvents.map((e) => e.type),
      ['custom.only'],
    );
    // A missing journal reads as empty.
    assert.equal(readJournal(path.join(repo.base, 'missing.jsonl')).events, []);
  } finally {
    repo.cleanup();
  }
});

test('readJournal: a corrupt line in the middle is skipped and reported; later events are kept', () => {
  const repo = tempRepo({ noInit: true });
  try {
    const file = path.join(repo.base, 'journal.jsonl');
    appendEvent(file, { ...eventBase('s1'), type: 'a' });
    fs.appendFileSync(file, 'garbage\u0000\n');
    fs.appendFileSync(file, '[1,2]\n');
    appendEvent(file, { ...eventBase('s1'), type: 'b' });
    const read = readJournal(file);
    assert.equal(
      read.unknownEvents.map((e) => e.type),
      ['a', 'b'],
    );
    assert.equal(read.corruptLines, [2, 3]);
  } finally {
    repo.cleanup();
  }
});

test('readJournal: events of the kinds this version knows are JournalEvents, any other kind an unknown event, in journal order', () => {
  const repo = tempRepo({ noInit: true });
  try {
    const file = path.join(repo.base, 'journal.jsonl');
    const base = eventBase('s1');
    appendEvent(file, { ...base, type: 'session.transcript', path: '/t.jsonl' });
    fs.appendFileSync(file, JSON.stringify({ ...base, type: 'session.future', x: 1 }) + '\n');
    fs.appendFileSync(file, JSON.stringify({ ...base, type: 'toString' }) + '\n');
    fs.appendFileSync(file, JSON.stringify({ ...base, type: 7 }) + '\n');
    appendEvent(file, { ...base, type: 'session.promote', branch: 'b', commit: 'c', parent: null });
    const read = readJournal(file);
    assert.equal(
      read.events.map((e) => e.type),
      ['session.transcript', 'session.promote'],
    );
    assert.equal(read.unknownEvents, [
      { ...base, type: 'session.future', x: 1 },
      { ...base, type: 'toString' },
    ]);
    assert.equal(read.corruptLines, [4], 'a line whose type is no string is corrupt, as before');
  } finally {
    repo.cleanup();
  }
});

test('a torn journal tail from a killed writer: log still works; the next snap repairs it', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const s1 = await snapJson(repo);
    const file = journalFile(repo, s1.session);
    fs.appendFileSync(file, '{"v":1,"type":"step.pre","session":"' + s1.session + '","step":2,"to');
    const log = await cli(repo, ['log', '--json']);
    assert.is(log.code, 0, log.stderr);
    assert.equal(
      (JSON.parse(log.stdout) as { step: number }[]).map((s) => s.step),
      [1],
    );
    repo.write('a.txt', 'b\n');
    const s2 = await snapJson(repo);
    assert.is(s2.step, 2);
    assert.ok(fs.readFileSync(file, 'utf8').endsWith('\n'));
    assert.equal(
      journalEvents(repo, s1.session).map((e) => e.type),
      ['session.start', 'step.checkpoint', 'step.checkpoint'],
    );
    assert.is(fs.statSync(file).mode & 0o777, 0o600);
  } finally {
    repo.cleanup();
  }
});

test('a corrupt middle line is tolerated by log, sessions and snap', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const s1 = await snapJson(repo);
    const file = journalFile(repo, s1.session);
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    lines.splice(1, 0, '{not json at all');
    fs.writeFileSync(file, lines.join('\n'));
    for (const args of [['log'], ['sessions'], ['show', '1']]) {
      const r = await cli(repo, args);
      assert.is(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    }
    repo.write('a.txt', 'changed\n');
    const s2 = await snapJson(repo);
    assert.is(s2.session, s1.session);
    assert.is(s2.step, 2);
  } finally {
    repo.cleanup();
  }
});

test('an event of a kind a newer agentsnap wrote is read, not folded, and kept byte for byte by every command', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const s1 = await snapJson(repo);
    repo.write('a.txt', 'b\n');
    await snapJson(repo);
    const file = journalFile(repo, s1.session);
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    // Between step 1 and step 2, as a newer version would journal it; one with a known kind's prefix too.
    const future = `{"v":1,"time":"2026-01-01T00:00:00.000Z","session":"${s1.session}","type":"session.future","step":1,"commit":"${'0'.repeat(40)}","note":"from a newer agentsnap"}`;
    const futureOp = `{"v":1,"time":"2026-01-01T00:00:00.000Z","session":"${s1.session}","type":"op.future","op":1}`;
    lines.splice(2, 0, future, futureOp);
    fs.writeFileSync(file, lines.join('\n'));
    for (const args of [['log'], ['sessions'], ['show', '1'], ['show', '2'], ['diff', '1', '2'], ['status']]) {
      const r = await cli(repo, args);
      assert.is(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    }
    const log = JSON.parse((await cli(repo, ['log', '--json'])).stdout) as { step: number }[];
    assert.equal(
      log.map((s) => s.step),
      [1, 2],
      'no step made of the unknown events',
    );
    const doctor = await cli(repo, ['doctor', '--json']);
    assert.not.match(doctor.stdout, /cannot be read/, 'an unknown kind is no corrupt line');
    // An undo and a new step append after it; the lines stay as they were written.
    const undo = await cli(repo, ['undo', '--force', '--json']);
    assert.is(undo.code, 0, undo.stderr);
    assert.is(repo.read('a.txt').toString(), 'a\n');
    repo.write('a.txt', 'c\n');
    const s3 = await snapJson(repo);
    assert.is(s3.session, s1.session);
    const after = fs.readFileSync(file, 'utf8').split('\n');
    assert.is(after[2], future);
    assert.is(after[3], futureOp);
    assert.equal(after.slice(0, 4), lines.slice(0, 4));
  } finally {
    repo.cleanup();
  }
});

test('state.json deleted: rebuilt from the journal, and missing refs are restored', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const s1 = await snapJson(repo);
    repo.write('a.txt', 'b\n');
    const s2 = await snapJson(repo);
    fs.rmSync(stateFile(repo, s1.session));
    repo.git(['update-ref', '-d', `refs/agent/${s1.session}/1`]);
    repo.git(['update-ref', '-d', `refs/agentsnap/sessions/${s1.session}/head`]);
    const s3 = await snapJson(repo);
    assert.is(s3.session, s1.session);
    assert.is(s3.step, 3);
    const refs = refsUnder(repo, `refs/agent/${s1.session}/`);
    assert.is(refs.get(`refs/agent/${s1.session}/1`), s1.commit);
    assert.is(refs.get(`refs/agent/${s1.session}/2`), s2.commit);
    assert.is(repo.git(['rev-parse', `${s3.commit}^`]).trim(), s2.commit, 'the chain continues from step 2');
    assert.ok(fs.existsSync(stateFile(repo, s1.session)));
  } finally {
    repo.cleanup();
  }
});

test('a stale state.json (journal ahead: a command died after journaling) is rebuilt and refs repaired', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const s1 = await snapJson(repo);
    const old = fs.readFileSync(stateFile(repo, s1.session));
    repo.write('a.txt', 'b\n');
    const s2 = await snapJson(repo);
    // Simulate a crash after the journal append: refs and state.json not updated.
    fs.writeFileSync(stateFile(repo, s1.session), old);
    repo.git(['update-ref', `refs/agentsnap/sessions/${s1.session}/head`, s1.commit]);
    repo.git(['update-ref', '-d', `refs/agent/${s1.session}/2`]);
    const s3 = await snapJson(repo);
    assert.is(s3.step, 3, 'step numbers are never reused');
    assert.is(repo.git(['rev-parse', `refs/agent/${s1.session}/2`]).trim(), s2.commit);
    assert.is(repo.git(['rev-parse', `${s3.commit}^`]).trim(), s2.commit);
    // Garbage in state.json is the same as none.
    fs.writeFileSync(stateFile(repo, s1.session), '{"v":1,');
    const s4 = await snapJson(repo);
    assert.is(s4.step, 4);
  } finally {
    repo.cleanup();
  }
});

test('read-only commands never write refs or state.json, even when the cache is stale (no lock held)', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const s1 = await snapJson(repo);
    const old = fs.readFileSync(stateFile(repo, s1.session));
    repo.write('a.txt', 'b\n');
    await snapJson(repo);
    // As seen mid-mutation by another process: journal appended, refs and state.json not yet updated.
    fs.writeFileSync(stateFile(repo, s1.session), old);
    repo.git(['update-ref', `refs/agentsnap/sessions/${s1.session}/head`, s1.commit]);
    repo.git(['update-ref', '-d', `refs/agent/${s1.session}/2`]);
    const refs = repo.git(['for-each-ref']);
    for (const args of [['sessions'], ['sessions', '--json'], ['log'], ['show', '1'], ['diff', '0', '1']]) {
      const r = await cli(repo, args);
      assert.is(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      assert.is(repo.git(['for-each-ref']), refs, `${args.join(' ')} wrote refs`);
      assert.equal(fs.readFileSync(stateFile(repo, s1.session)), old, `${args.join(' ')} wrote state.json`);
    }
    const list = JSON.parse((await cli(repo, ['sessions', '--json'])).stdout) as { steps: number }[];
    assert.is(list[0]?.steps, 2, 'the journal is still the truth for readers');
  } finally {
    repo.cleanup();
  }
});

test('sessions --json and log read the journal even when state.json is missing', async () => {
  const repo = tempRepo({ files: { 'a.txt': 'a\n' } });
  try {
    const s1 = await snapJson(repo, ['--tool', 'Write']);
    fs.rmSync(stateFile(repo, s1.session));
    const list = JSON.parse((await cli(repo, ['sessions', '--json'])).stdout) as { id: string; steps: number }[];
    assert.equal(
      list.map((s) => [s.id, s.steps]),
      [[s1.session, 1]],
    );
  } finally {
    repo.cleanup();
  }
});

test.run();
