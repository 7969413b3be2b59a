// The calls that run in this process while `action` runs, watched with V8's inspector (issue 30, item 3): which
// functions of src/ run (exact function coverage), and for each of them its caller (a breakpoint at the start
// of every function that ran in a first pass: an async function's start runs in its caller's stack, so the frame
// below it is the caller). Used by scripts/hook-path.ts and test/server/hook-path.test.ts to find the calls that go from
// a lower layer into a higher one, which no import shows (closures stored on a Repo, callbacks, injected calls).
// Deterministic: no sampling, no timing. The action runs twice: the coverage pass and the breakpoint pass.
import inspector from 'node:inspector';
import path from 'node:path';
import { ROOT } from './helpers.js';
import { layerOf } from './import-graph.js';

const SRC_URL = `file://${path.join(ROOT, 'src')}/`;

interface Location {
  scriptId: string;
  lineNumber: number;
  columnNumber: number;
}
interface CallFrame {
  functionName: string;
  location: Location;
}
interface StackTrace {
  callFrames: { functionName: string; scriptId: string; lineNumber: number; columnNumber: number }[];
  parent?: StackTrace;
}

export interface RuntimeFrame {
  /** File of src/ ('/'-separated), or null for node's and the packages' frames. */
  file: string | null;
  fn: string;
  /** Line in the TypeScript source (1-based), where a source map gives it. */
  line: number | null;
}

export interface RuntimeCall {
  caller: RuntimeFrame;
  callee: RuntimeFrame;
  times: number;
  /** The first time: the frames of src/ that led to it, callee first, async callers included. */
  chain: RuntimeFrame[];
}

export interface RuntimeCalls {
  /** file → names of its functions that ran. */
  ran: Map<string, Set<string>>;
  calls: RuntimeCall[];
}

const VLQ = new Map([...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'].map((c, i) => [c, i]));

/** Per generated line, the (generated column, original line) pairs of a source map's `mappings`. */
function decodeMappings(mappings: string): [number, number][][] {
  const lines: [number, number][][] = [];
  let origLine = 0;
  for (const lineText of mappings.split(';')) {
    const segs: [number, number][] = [];
    let col = 0;
    for (const seg of lineText.split(',')) {
      if (!seg) continue;
      const values: number[] = [];
      let shift = 0;
      let value = 0;
      for (const ch of seg) {
        const d = VLQ.get(ch) as number;
        value += (d & 31) << shift;
        if (d & 32) shift += 5;
        else {
          values.push(value & 1 ? -(value >> 1) : value >> 1);
          value = 0;
          shift = 0;
        }
      }
      col += values[0] ?? 0;
      if (values.length >= 4) {
        origLine += values[2] as number;
        segs.push([col, origLine]);
      }
    }
    lines.push(segs);
  }
  return lines;
}

export async function runtimeCalls(action: () => Promise<void>): Promise<RuntimeCalls> {
  const session = new inspector.Session();
  session.connect();
  const post = <T = Record<string, unknown>>(method: string, params?: object): Promise<T> =>
    new Promise((resolve, reject) => session.post(method, params, (err, res) => (err ? reject(err) : resolve(res as T))));
  // A paused frame's own url is empty: its script is known by id.
  const scripts = new Map<string, { file: string | null; sourceMapURL: string }>();
  session.on('Debugger.scriptParsed', (msg: { params: { scriptId: string; url: string; sourceMapURL?: string } }) => {
    const { scriptId, url, sourceMapURL } = msg.params;
    scripts.set(scriptId, { file: url.startsWith(SRC_URL) ? url.slice(SRC_URL.length) : null, sourceMapURL: sourceMapURL ?? '' });
  });
  const maps = new Map<string, [number, number][][] | null>();
  const originalLine = (loc: Location): number | null => {
    let map = maps.get(loc.scriptId);
    if (map === undefined) {
      const url = scripts.get(loc.scriptId)?.sourceMapURL ?? '';
      const m = /^data:application\/json;base64,(.*)$/.exec(url);
      map = m
        ? decodeMappings((JSON.parse(Buffer.from(m[1] as string, 'base64').toString('utf8')) as { mappings: string }).mappings)
        : null;
      maps.set(loc.scriptId, map);
    }
    if (!map) return null;
    let best: number | null = null;
    for (const [col, line] of map[loc.lineNumber] ?? []) if (col <= loc.columnNumber) best = line + 1;
    return best;
  };
  const frame = (fn: string, loc: Location): RuntimeFrame => ({
    file: scripts.get(loc.scriptId)?.file ?? null,
    fn: fn || '(anonymous)',
    line: originalLine(loc),
  });
  try {
    await post('Debugger.enable');
    await post('Profiler.enable');
    await post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
    await action();
    const { result } = await post<{
      result: {
        scriptId: string;
        functions: { functionName: string; ranges: { startOffset: number; endOffset: number; count: number }[] }[];
      }[];
    }>('Profiler.takePreciseCoverage');
    await post('Profiler.stopPreciseCoverage');
    await post('Profiler.disable');
    const ran = new Map<string, Set<string>>();
    for (const script of result) {
      const file = scripts.get(script.scriptId)?.file;
      if (!file) continue;
      const { scriptSource } = await post<{ scriptSource: string }>('Debugger.getScriptSource', { scriptId: script.scriptId });
      const lineStarts = [0];
      for (let i = 0; i < scriptSource.length; i++) if (scriptSource.charCodeAt(i) === 10) lineStarts.push(i + 1);
      const at = (offset: number): Location => {
        let lo = 0;
        let hi = lineStarts.length - 1;
        while (lo < hi) {
          const mid = (lo + hi + 1) >> 1;
          if ((lineStarts[mid] as number) <= offset) lo = mid;
          else hi = mid - 1;
        }
        return { scriptId: script.scriptId, lineNumber: lo, columnNumber: offset - (lineStarts[lo] as number) };
      };
      for (const fn of script.functions) {
        const range = fn.ranges[0];
        if (!range || range.count === 0 || range.startOffset === 0) continue; // not run, or a module's top level
        (ran.get(file) ?? ran.set(file, new Set()).get(file))?.add(fn.functionName || '(anonymous)');
        const { locations } = await post<{ locations: Location[] }>('Debugger.getPossibleBreakpoints', {
          start: at(range.startOffset),
          end: at(range.endOffset),
          restrictToFunction: true,
        });
        const first = locations[0];
        if (first)
          await post('Debugger.setBreakpoint', {
            location: { scriptId: first.scriptId, lineNumber: first.lineNumber, columnNumber: first.columnNumber },
          });
      }
    }
    await post('Debugger.setAsyncCallStackDepth', { maxDepth: 64 });
    const calls = new Map<string, RuntimeCall>();
    session.on('Debugger.paused', (msg: { params: { callFrames: CallFrame[]; asyncStackTrace?: StackTrace } }) => {
      try {
        const [callee, caller] = msg.params.callFrames;
        if (!callee || !caller) return;
        const to = frame(callee.functionName, callee.location);
        const from = frame(caller.functionName, caller.location);
        const key = `${from.file}:${from.fn}:${from.line}\0${to.file}:${to.fn}:${to.line}`;
        const had = calls.get(key);
        if (had) {
          had.times++;
          return;
        }
        const chain = msg.params.callFrames.map((f) => frame(f.functionName, f.location));
        for (let t = msg.params.asyncStackTrace; t; t = t.parent) for (const f of t.callFrames) chain.push(frame(f.functionName, f));
        calls.set(key, { caller: from, callee: to, times: 1, chain: chain.filter((f) => f.file !== null) });
      } finally {
        session.post('Debugger.resume');
      }
    });
    await action();
    return { ran, calls: [...calls.values()] };
  } finally {
    await post('Debugger.disable').catch(() => undefined);
    session.disconnect();
  }
}

/** The calls from a file of a lower layer into a file of a higher one. */
export function upwardCalls(calls: RuntimeCall[], layers: string[]): RuntimeCall[] {
  const rank = (file: string): number => layers.indexOf(layerOf(file));
  return calls.filter((c) => c.caller.file !== null && c.callee.file !== null && rank(c.caller.file) < rank(c.callee.file));
}

export const describeFrame = (f: RuntimeFrame): string => `${f.file}:${f.line ?? '?'} ${f.fn}`;
