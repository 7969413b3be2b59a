// Failures the generative test (test/nothing-lost.property.test.ts) found that
// are NOT among issue 13's known items, each pinned as a small named example.
// EXPECTED TO FAIL until fixed (found on branch gen; reported to the lead).
//
// (1. An operation swallowing the user's edits into its result commit is fixed:
//  test/undo.checkpoint.test.ts, "an operation does not absorb the user's edit: …".)
//
// 2. An unhooked read is recorded in the state of a later operation.
//    Shrunk sequence (AGENTSNAP_PROPERTY_CASE):
//      ["off",[{"t":"edit","e":{"k":"rm","f":0}},{"t":"restore","s":0,"after":false,"f":0,"force":false},
//              {"t":"read"},{"t":"undo","s":null,"force":false},
//              {"t":"call","tool":"Write","edits":[{"k":"chmod","f":0}],"during":null,"fail":false}]]
//    A Read runs (transcript only) while the session head is a restore's
//    result; the user then runs `undo`, which moves the head; the next hooked
//    call imports the Read with pre = post = the head at import time (the
//    undo's result), not the state the Read saw. `undo <read step>` then goes
//    to the wrong state, and the read's step number comes after the undo.
//    DEVELOPING.md says log/undo do not import (reads appear at the next
//    hooked call); importing before an operation, or recording the head at
//    the transcript line's time, would close it. Possibly accepted as a limit:
//    the lead decides (AGENTSNAP_PROPERTY_SKIP_CHECKS=reads leaves it out).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FAMILIES, runSequence, type Op } from './support/nothing-lost.js';

test('found: an unhooked Read imported after an undo keeps the state it saw, not the undo\'s result (EXPECTED TO FAIL until fixed)', async () => {
  const ops: Op[] = [
    { t: 'edit', e: { k: 'rm', f: 0 } }, // the user deletes a.txt (the first file but .gitignore)
    { t: 'restore', s: 0, after: false, f: 0, force: false }, // agentsnap restore 1 -- .gitignore
    { t: 'read' }, // a Read, in the transcript only
    { t: 'undo', s: null, force: false }, // agentsnap undo: the head moves
    { t: 'call', tool: 'Write', edits: [{ k: 'chmod', f: 0 }], during: null, fail: false }, // its pre imports the Read
  ];
  // Without the ignore family, as found (edits then leave .gitignore alone).
  await runSequence('off', FAMILIES.filter((f) => f !== 'ignore'), ops);
});

test.run();
