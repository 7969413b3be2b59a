// Issue 13, "prove it": the generative test of the whole product. fast-check
// draws sequences of what agents and users do (hooked tool calls through the
// real `agentsnap hook claude` path, unhooked reads in the transcript, user
// edits between and during calls, ignore-rule and exclude changes, index
// flags, hard links from outside, mmap writes, symlinks and type changes,
// unreadable entries, nested repositories, the user's own git, and undo /
// redo / restore / revert / apply), runs them against a real repository with
// the warm server off, on, or without root's read capabilities, and checks
// after every operation. Issue 29's hostile cases are families too: usergc
// (the user's own gc --prune=now, repack -ad, prune, reflog expire, gc --auto,
// worktree prune, fsck, also while a tool call is open), diskfull (the
// repository on a 16 MiB tmpfs, filled to a drawn level and freed again),
// gitmeta-symlink (.gitmodules/.gitattributes as symlinks in or out of the
// worktree), nested-nocommit (git init without a commit in directories that
// hold tracked files); and each sequence draws its object format (sha1 or
// sha256). The checks:
//  (a) every snapshot equals an independent ground truth of that moment
//      (test/support/nothing-lost.ts groundTruth: tree and skipped set);
//  (b) nothing lost: every blob the user had on disk at a snapshot instant or
//      at the start of a restore is still reachable or on disk, and no
//      operation touches an ignored, left-out or nested file;
//  (c) an undo/redo/restore/revert leaves the worktree equal to its target
//      except the paths it reported as left;
//  (d) the user's index, HEAD, refs and stash are byte-identical across
//      every agentsnap call;
//  (e) no agentsnap command fails after the user's own git: never exit 70 or
//      an undocumented code, log and doctor work after each user gc, and a
//      snapshot whose objects the gc removed is reported by them as lost;
//      the user's gc and fsck themselves succeed.
//  On a full disk: a command that runs out of space exits 1 with DiskFull,
//  the journal byte-identical, no agentsnap ref added or moved, the worktree
//  unchanged; a hook says so in its warning; after `free` all works again.
// On failure fast-check shrinks the sequence and the message carries the seed,
// the path and the shrunk sequence. Knobs (all optional):
//   AGENTSNAP_PROPERTY_RUNS=N     runs (default: the fixed CI set)
//   AGENTSNAP_PROPERTY_SEED=S     seed (with _PATH=P replays one shrunk case)
//   AGENTSNAP_PROPERTY_OPS=a,b    only these op families (see FAMILIES)
//   AGENTSNAP_PROPERTY_SKIP=a,b   all families but these
//   AGENTSNAP_PROPERTY_MODES=off,server,bgserver,nocaps
//   AGENTSNAP_PROPERTY_FORMATS=sha1,sha256  object formats drawn (default both)
//   AGENTSNAP_PROPERTY_LAYOUTS=git,shadow   a git repository, or a directory in no repository that agentsnap
//                                 keeps a shadow repository for (default both; see LAYOUTS)
//   AGENTSNAP_PROPERTY_MAX_OPS=N  longest sequence (default 12)
//   AGENTSNAP_PROPERTY_SHRINK=0   report the first failure unshrunk (shrinking can take minutes)
//   AGENTSNAP_PROPERTY_TIMES=1    print each passing sequence's wall time (mode, format, length)
//   AGENTSNAP_PROPERTY_SKIP_CHECKS=protect,reads  leave out (c)'s protection check, or the
//                                 check of unhooked reads' recorded state (to hunt other bugs
//                                 while one of those is open); keptskipped: (c)'s check that an
//                                 operation reports as left a skipped path it keeps (a nested
//                                 repository without a commit, .env, a file over the cap); keptyours: (c')'s check that
//                                 what the default undo/redo/restore kept as the user's was changed
//                                 outside the tool calls since its target
//   AGENTSNAP_PROPERTY_CASE='["off","sha256",[{"t":"edit",...},...],"shadow"]'  runs exactly that
//                                 sequence (a counterexample as fast-check prints it;
//                                 the older ["off",[...]] form means sha1, and no layout means git)
// One family alone: AGENTSNAP_PROPERTY_OPS=call,edit,undo,usergc (the family with
// the ones that make states for it); without one: AGENTSNAP_PROPERTY_SKIP=diskfull.
import { test } from 'uvu';
import fc from 'fast-check';
import {
  FAMILIES,
  FORMATS,
  LAYOUTS,
  MODES,
  canDropCaps,
  diskFullUnavailable,
  hasPython,
  listFromEnv,
  opArb,
  runSequence,
  type Layout,
  type Mode,
  type ObjectFormat,
} from '../support/nothing-lost.js';

const env = process.env;
let families = listFromEnv(FAMILIES, env.AGENTSNAP_PROPERTY_OPS, env.AGENTSNAP_PROPERTY_SKIP);
let modes = listFromEnv(MODES, env.AGENTSNAP_PROPERTY_MODES, undefined);
const formats = listFromEnv(FORMATS, env.AGENTSNAP_PROPERTY_FORMATS, undefined);
const layouts = listFromEnv(LAYOUTS, env.AGENTSNAP_PROPERTY_LAYOUTS, undefined);
if (diskFullUnavailable !== null && families.includes('diskfull')) {
  console.log(`  (diskfull skipped: ${diskFullUnavailable})`);
  families = families.filter((f) => f !== 'diskfull');
}
if (!hasPython && families.includes('mmap')) {
  console.log('  (mmap writes skipped: python3 with mmap is missing)');
  families = families.filter((f) => f !== 'mmap');
}
if (!canDropCaps && modes.includes('nocaps')) {
  console.log(
    '  (mode nocaps skipped: needs root and setpriv to drop the read capabilities; unreadable entries are then read like any other)',
  );
  modes = modes.filter((m) => m !== 'nocaps');
}
const maxOps = Number(env.AGENTSNAP_PROPERTY_MAX_OPS ?? 12);
const runs = env.AGENTSNAP_PROPERTY_RUNS ? Number(env.AGENTSNAP_PROPERTY_RUNS) : null;
/** The fixed CI set: one seed per mode, a few runs each, bounded on a loaded 2-core machine. */
const CI: Record<Mode, { seed: number; runs: number }> = {
  off: { seed: 1301, runs: 4 },
  server: { seed: 1302, runs: 3 },
  bgserver: { seed: 1304, runs: 2 },
  nocaps: { seed: 1303, runs: 2 },
};

function property(mode: Mode | null, layout: Layout | null = null) {
  const modeArb = mode ? fc.constant(mode) : fc.constantFrom(...modes);
  let first = true;
  return fc.asyncProperty(
    modeArb,
    fc.constantFrom(...formats),
    fc.array(opArb(families), { minLength: 1, maxLength: maxOps }),
    layout ? fc.constant(layout) : fc.constantFrom(...layouts),
    async (m, format, ops, l) => {
      const t0 = performance.now();
      try {
        await runSequence(m, families, ops, undefined, format, l);
        if (env.AGENTSNAP_PROPERTY_TIMES)
          console.log(`  time ${m} ${format} ${l} ${ops.length} ops ${Math.round(performance.now() - t0)} ms`);
      } catch (e) {
        // Shown at once: shrinking re-runs the sequence many times and can take minutes.
        if (first)
          console.error(`  nothing-lost: first failure, before shrinking:\n${e instanceof Error ? e.message : String(e)}\n  shrinking...`);
        first = false;
        throw e;
      }
    },
  );
}

function params(seed: number, numRuns: number): fc.Parameters<[Mode, ObjectFormat, unknown[], Layout]> {
  return {
    seed,
    numRuns,
    ...(env.AGENTSNAP_PROPERTY_PATH ? { path: env.AGENTSNAP_PROPERTY_PATH } : {}),
    ...(env.AGENTSNAP_PROPERTY_SHRINK === '0' ? { endOnFailure: true } : {}),
    // The whole report: seed, path, the shrunk sequence and the error of that sequence.
    verbose: 1,
    includeErrorInReport: true,
  };
}

if (env.AGENTSNAP_PROPERTY_CASE) {
  // fast-check prints records as {__proto__:null,...}: that is not JSON, the rest is.
  const parsed = JSON.parse(env.AGENTSNAP_PROPERTY_CASE.replace(/__proto__:null,?/g, '')) as
    | [Mode, ObjectFormat, Parameters<typeof runSequence>[2], Layout]
    | [Mode, ObjectFormat, Parameters<typeof runSequence>[2]]
    | [Mode, Parameters<typeof runSequence>[2]];
  const [mode, format, ops, layout] =
    parsed.length === 2 ? [parsed[0], 'sha1' as const, parsed[1], 'git' as const] : [parsed[0], parsed[1], parsed[2], parsed[3] ?? 'git'];
  test(`nothing lost: the given sequence (${mode}, ${format}, ${layout}, ${ops.length} ops)`, async () => {
    await runSequence(mode, families, ops, (log) => console.log(`  passed:\n    ${log.join('\n    ')}`), format, layout);
  });
} else if (runs !== null || env.AGENTSNAP_PROPERTY_SEED) {
  const seed = env.AGENTSNAP_PROPERTY_SEED ? Number(env.AGENTSNAP_PROPERTY_SEED) : Date.now() % 2 ** 31;
  const n = runs ?? 1;
  test(`nothing lost: ${n} random sequences (seed ${seed}; modes ${modes.join(',')}; formats ${formats.join(',')}; layouts ${layouts.join(',')}; families ${families.join(',')})`, async () => {
    console.log(`  nothing-lost: seed ${seed} (replay: AGENTSNAP_PROPERTY_SEED=${seed})`);
    await fc.assert(property(null), params(seed, n));
  });
} else {
  // Sequences the generative runs found, each a bug fixed since: replayed as they were, in every CI run.
  const PINNED: { found: string; mode: Mode; format: ObjectFormat; ops: Parameters<typeof runSequence>[2] }[] = [
    {
      // An untracked symlink of an earlier snapshot below a directory the agent made unreadable: undo exited 70
      // (EACCES from lstat in reconcileWithUserIndex); now listed as unreadable and left alone.
      found: 'seed 32003, run 346',
      mode: 'nocaps',
      format: 'sha1',
      ops: JSON.parse(
        '[{"t":"edit","e":{"k":"mv","f":14,"p":0}},{"t":"edit","e":{"k":"symlink","p":5,"t":2}},{"t":"undo","s":0,"force":false,"exact":false},{"t":"call","tool":"Bash","edits":[{"k":"lock","e":4}],"during":{"k":"append","f":16,"c":2},"fail":true,"gc":null},{"t":"undo","s":14,"force":true,"exact":false},{"t":"undo","s":17,"force":true,"exact":false},{"t":"edit","e":{"k":"symlink","p":9,"t":3}}]',
      ),
    },
  ];
  for (const p of PINNED.filter((x) => modes.includes(x.mode)))
    test(`nothing lost: the sequence of ${p.found} (${p.mode}, ${p.format})`, async () => {
      await runSequence(p.mode, families, p.ops, undefined, p.format);
    });
  for (const mode of modes) {
    const { seed, runs: n } = CI[mode];
    const how = {
      off: 'the server off',
      server: 'the warm server hosted (as wrap runs it)',
      bgserver: 'a background server',
      nocaps: 'the server off, without read capabilities',
    }[mode];
    test(`nothing lost: ${n} sequences with ${how} (seed ${seed})`, async () => {
      await fc.assert(property(mode, 'git'), params(seed, n));
    });
  }
  if (layouts.includes('shadow') && modes.includes('off'))
    test('nothing lost: 2 sequences in a directory in no git repository, through its shadow repository (seed 1305)', async () => {
      await fc.assert(property('off', 'shadow'), params(1305, 2));
    });
}

test.run();
