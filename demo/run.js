#!/usr/bin/env node
// `npm run demo`: a throwaway repository, a scripted agent run through
// `agentsnap wrap`, then what agentsnap recorded (log, show, replay), then undo and redo.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = path.join(root, 'bin', 'agentsnap.js');
const agent = path.join(root, 'demo', 'agent.mjs');
const tty = process.stdout.isTTY && !process.env.NO_COLOR;
const bold = (s) => (tty ? `\x1b[1m${s}\x1b[0m` : s);

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentsnap-demo-'));
// The demo's own commits need an identity; agentsnap itself needs none.
const env = {
  ...process.env,
  GIT_AUTHOR_NAME: 'Demo User',
  GIT_AUTHOR_EMAIL: 'demo@example.com',
  GIT_COMMITTER_NAME: 'Demo User',
  GIT_COMMITTER_EMAIL: 'demo@example.com',
};

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: dir, env, stdio: 'inherit', ...opts });
  if (r.error) throw r.error;
  return r.status ?? 1;
}

function step(title, args) {
  console.log(`\n${bold(`$ agentsnap ${args.join(' ')}`)}   ${title ? `# ${title}` : ''}`);
  run(process.execPath, [bin, ...args]);
}

function write(rel, text) {
  fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
  fs.writeFileSync(path.join(dir, rel), text);
}

write('README.md', '# demo project\n');
write('src/greet.js', "export const greet = () => 'Hello';\n");
write('notes.txt', 'scratch notes\n');
write('test/expect.txt', 'Hello, world\n');
for (const args of [
  ['init', '-q', '-b', 'main'],
  ['add', '-A'],
  ['commit', '-q', '-m', 'initial'],
]) {
  if (run('git', args) !== 0) process.exit(1);
}

console.log(bold(`A throwaway repository: ${dir}`));
console.log(`\n${bold('$ agentsnap wrap -- node demo/agent.mjs')}   # a scripted agent: edit, create, delete, shell commands (one fails)`);
const code = run(process.execPath, [bin, 'wrap', '--', process.execPath, agent]);
console.log(`(the agent exited with ${code}; wrap exits with the same code)`);

step('every tool call is a step, with the files it changed', ['log']);
step('what step 2 changed, as a diff', ['show', '2']);
step('the failing shell command still changed a file', ['show', '5']);
step('the whole session in order, for a person or an agent to regain context', ['replay']);
step('what undo 4 would do, without doing it', ['undo', '4', '--dry-run']);
step('back to just before tool call 4: notes.txt returns, later files go', ['undo', '4']);
console.log(
  `notes.txt exists again: ${fs.existsSync(path.join(dir, 'notes.txt'))}; src/farewell.js (step 3) kept: ${fs.existsSync(path.join(dir, 'src/farewell.js'))}`,
);
step('changed your mind: redo returns to the state before the undo', ['redo']);
console.log(`notes.txt after redo: ${fs.existsSync(path.join(dir, 'notes.txt')) ? 'present' : 'deleted again'}`);
step('where the session stands', ['status']);
// The hints name the command a user types: `agentsnap`, as installed (README "Install").
const installed = (process.env.PATH ?? '').split(path.delimiter).some((d) => d && fs.existsSync(path.join(d, 'agentsnap')));
console.log(
  `\n${bold('Try more in the demo repository:')}\n  cd ${dir}\n  agentsnap diff 0             # everything the agent changed\n  agentsnap undo 2 --dry-run   # what undoing from step 2 would change\n  git status                   # agentsnap never touched the index, HEAD or branches\n  git for-each-ref refs/agent/`,
);
if (!installed)
  console.log(`(agentsnap is not on your PATH yet: \`npm install -g .\` in ${root} installs it; see "Install" in the README)`);
