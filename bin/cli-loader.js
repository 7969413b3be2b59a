// Loads the bundled CLI (dist/cli.bundle.cjs) through V8's code cache: the
// bundle's code compiled by an earlier run is read back instead of compiled
// again, ~30 ms less per start (issue 19: every `snap`, `wrap` and hook on
// the Node path is a new process). Node 20 has no compile cache for modules
// (module.enableCompileCache is Node 22), hence a CommonJS bundle run as a
// vm.Script with cachedData.
//
// The cache sits next to the bundle, one per Node version and V8 flags (the
// server runs with its own), and holds the bundle's identity (device, inode,
// size, ns mtime and ctime) it was made from and its own length and CRC-32:
// V8 itself checks only its version, its flags and the source's length, and
// takes damaged bytes for code (a fatal error). A missing, stale or rejected
// cache is written again at the exit of the process that found it so (its
// code compiled by then: what that command ran). Nothing here may fail a
// command: a cache that cannot be read or written is not used.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');
const zlib = require('node:zlib');
const { createRequire } = require('node:module');
const { pathToFileURL } = require('node:url');

const BUNDLE = path.join(__dirname, '..', 'dist', 'cli.bundle.cjs');

/** A short stable hash (FNV-1a, 32 bits) for the cache's file name; the header holds the whole key. */
function shortHash(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}

/** V8 does not check its cache's bytes (a damaged one is a fatal error in the deserializer): its length and CRC-32 are in the header. */
function integrity(data) {
  return `${data.length}:${zlib.crc32(data).toString(16)}`;
}

function readCache(file, key) {
  try {
    const buf = fs.readFileSync(file);
    const nl = buf.indexOf(10);
    if (nl < 0) return undefined;
    const header = buf.toString('utf8', 0, nl);
    const data = buf.subarray(nl + 1);
    return header === `${key} ${integrity(data)}` ? data : undefined;
  } catch {
    return undefined; // no cache, or one unreadable: compiled afresh, and written again
  }
}

function writeCache(file, key, script) {
  const tmp = `${file}.tmp-${process.pid}`;
  try {
    const data = script.createCachedData();
    fs.writeFileSync(tmp, Buffer.concat([Buffer.from(`${key} ${integrity(data)}\n`), data]), { mode: 0o644 });
    fs.renameSync(tmp, file);
  } catch {
    // best effort: without a cache the next start compiles again
    try {
      fs.unlinkSync(tmp);
    } catch {
      /* not made */
    }
  }
}

/** The CLI module's exports (`main`). */
function loadCli() {
  const fd = fs.openSync(BUNDLE, 'r');
  let source;
  let st;
  try {
    st = fs.fstatSync(fd, { bigint: true });
    source = fs.readFileSync(fd, 'utf8');
  } finally {
    fs.closeSync(fd);
  }
  const runtime = `${process.version} ${process.versions.v8} ${process.execArgv.join(' ')}`;
  const key = `agentsnap-cli-cache 2 ${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs} ${runtime}`;
  const cacheFile = `${BUNDLE}.${shortHash(runtime)}.cache`;
  const cachedData = readCache(cacheFile, key);
  // Strict, as the ES modules it is built from (and as the ES bundle ran).
  const script = new vm.Script(
    `(function (exports, require, module, __filename, __dirname, __agentsnapImport) {'use strict';${source}\n})`,
    {
      filename: BUNDLE,
      ...(cachedData ? { cachedData } : {}),
    },
  );
  if (!cachedData || script.cachedDataRejected) process.once('exit', () => writeCache(cacheFile, key, script));
  const module = { exports: {} };
  // The bundle's import() of dist/mcp.bundle.js and dist/ui.bundle.js (scripts/bundle-cli.mjs): a vm.Script has no
  // module loader of its own (and Node 20 drops vm's importModuleDynamically where a code cache is used).
  const importBeside = (spec) => import(new URL(spec, pathToFileURL(BUNDLE)).href);
  script.runInThisContext()(module.exports, createRequire(BUNDLE), module, BUNDLE, path.dirname(BUNDLE), importBeside);
  return module.exports;
}

module.exports = { loadCli };
