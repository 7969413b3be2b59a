// `agentsnap ui` (issue 20): a local page over the public API. This layer sits
// above api/ and only calls it: every endpoint is one API call (log, show,
// diff, replay, undo/redo/restore/revert with their dry runs), so what the page
// shows and does is what the CLI shows and does, redaction included.
//
// A page that can rewrite files is a target, so every request must pass:
//  - the socket is bound to 127.0.0.1 only;
//  - Host must be 127.0.0.1:<port> or localhost:<port> (a DNS-rebinding page
//    reaches us under its own name, so its Host names that);
//  - a random token (32 bytes from crypto) proves the caller read the URL the
//    command printed: `?token=` on the page load, and the `X-Agentsnap-Token`
//    header on every /api call (a custom header: no other site can send it
//    without a CORS preflight, which we never answer). The page load sets an
//    HttpOnly, SameSite=Strict cookie for the page's own files (scripts,
//    styles) that holds another random value, never the token: browsers send
//    127.0.0.1's cookies to every port of it, so any server there the browser
//    visits gets the cookie — it must open neither the page nor the API;
//  - a mutating request (anything but GET/HEAD) must carry an Origin equal to
//    the page's own (CSRF);
//  - no CORS headers at all; a CSP of `default-src 'self'` (no external
//    sources: the page ships its scripts, styles and diff2html itself).
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { diff, log, logAllSessions, resolveSession, sessions, show, type RepoOptions } from '../api/api.js';
import { redo, restore, revert, status, undo } from '../api/undo.js';
import { replay } from '../api/replay.js';
import { errors, isAgentsnapError } from '../base/errors.js';
import { firstFailure } from '../check/first-failure.js';
import { packageRoot } from '../base/package-root.js';
import type { Repo } from '../git/repo.js';
import { repoFor } from '../api/open.js';
import { sessionsDir } from '../session/session.js';
import type { Step } from '../session/model.js';

export { openInBrowser } from './open.js';

export interface UiServerOptions extends RepoOptions {
  /** TCP port on 127.0.0.1 (default 0: a free one). */
  port?: number | undefined;
  /** The session the page opens with (id or name); default: the most recent. */
  session?: string | undefined;
  /** Where the page's files are (default: the package's dist/ui-page). */
  assetsDir?: string | undefined;
}

export interface UiServer {
  /** The URL to open: http://127.0.0.1:<port>/?token=… */
  url: string;
  port: number;
  token: string;
  close(): Promise<void>;
}

export const UI_HOST = '127.0.0.1';
export const TOKEN_HEADER = 'x-agentsnap-token';
/** The cookie's name holds the port: browsers keep one cookie jar per host whatever the port, and two pages must not overwrite each other's. */
const cookieName = (port: number) => `agentsnap_ui_${port}`;
const CSP = "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
/** Request bodies are small JSON objects (a step, a path): anything larger is refused unread. */
const MAX_BODY = 64 * 1024;

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

/** A Confirm whose plan is no longer its dry run's: the new dry run goes back to the page, nothing was done. */
class PlanChanged extends Error {
  constructor(readonly dryRun: unknown) {
    super('what this would do changed since its dry run (a step ran, or a file changed): nothing was done.');
  }
}

interface PlanShape {
  target?: unknown;
  changes: { path: string; change: string }[];
  outside: { path: string; change: string }[];
  unprotected: { step: number }[];
  left: { path: string }[];
  undone?: number[];
  wouldRefuse: boolean;
}

/**
 * What an operation would do, as a short id: its target, the files it would write and how, the user's edits it
 * would overwrite, the unprotected steps it crosses, what it leaves, the steps it marks undone. The page confirms an
 * id; the real run goes ahead only while a new dry run has the same one.
 */
function planId(result: unknown): string {
  const r = result as { files?: PlanShape } & PlanShape;
  const p = r.files ?? r;
  const sorted = (xs: string[]) => [...xs].sort();
  const key = {
    target: p.target ?? null,
    changes: sorted(p.changes.map((c) => `${c.change} ${c.path}`)),
    outside: sorted(p.outside.map((c) => `${c.change} ${c.path}`)),
    unprotected: p.unprotected.map((u) => u.step),
    left: sorted(p.left.map((l) => l.path)),
    undone: p.undone ?? [],
    wouldRefuse: p.wouldRefuse,
  };
  return createHash('sha256').update(JSON.stringify(key)).digest('hex').slice(0, 32);
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function sameToken(given: string | undefined | null, token: string): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

function cookieToken(req: http.IncomingMessage, port: number): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === cookieName(port)) return v.join('=');
  }
  return undefined;
}

/** The HTTP status of an API error: refusals and conflicts are 409, busy 423, the caller's mistakes 400. */
function statusOfError(e: unknown): number {
  if (!isAgentsnapError(e)) return 500;
  switch (e.exit) {
    case 'refused':
    case 'conflict':
      return 409;
    case 'busy':
      return 423;
    case 'internal':
      return 500;
    default:
      return 400;
  }
}

function escapeAttr(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

async function readJson(req: http.IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > MAX_BODY) throw new HttpError(413, 'request body too large');
    chunks.push(c as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return {};
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new HttpError(400, 'the request body is not JSON');
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new HttpError(400, 'the request body must be a JSON object');
  return v as Record<string, unknown>;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** A step number from a query string or body: the API validates the range. */
function num(v: unknown, what: string): number {
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d{1,9}$/.test(v) ? Number(v) : NaN;
  if (!Number.isInteger(n)) throw errors.invalidArgument(`${what} must be a step number, not ${JSON.stringify(v)}.`);
  return n;
}

/** A fingerprint of every session's journal (size and mtime): the page polls it and reloads what changed. */
function stamp(repo: Repo): string {
  // No sessions directory is "no session yet"; no git directory is a repository gone (removed, moved) under the page.
  if (!fs.existsSync(repo.gitDir)) {
    throw errors.notARepository(`the repository at ${repo.worktree} is gone (removed or moved while the page was open).`, {
      hint: 'Stop agentsnap ui (Ctrl-C) and start it again in the repository.',
    });
  }
  const dir = sessionsDir(repo);
  let names: string[] = [];
  try {
    names = fs.readdirSync(dir).sort();
  } catch {
    return 'none'; // no sessions directory yet: its key is none
  }
  return names
    .map((n) => {
      try {
        const st = fs.statSync(path.join(dir, n, 'journal.jsonl'));
        return `${n}:${st.size}:${st.mtimeMs}`;
      } catch {
        return `${n}:-`; // a session removed meanwhile: its key says so
      }
    })
    .join(',');
}

/**
 * A step for the timeline: without its input and output (a Write's content, a command's output), which `show`
 * gives for the one step selected. The timeline is fetched again at every change while an agent runs: its size
 * must grow with the number of steps, not with what they wrote.
 */
function brief(step: Step): Omit<Step, 'input' | 'output'> {
  const { input: _i, output: _o, ...rest } = step;
  return rest;
}

const MUTATING = new Set(['undo', 'redo', 'restore', 'revert']);

function send(res: http.ServerResponse, code: number, type: string, body: string | Buffer, extra: Record<string, string> = {}): void {
  res.writeHead(code, {
    'Content-Type': type,
    'Content-Length': Buffer.byteLength(body),
    'Content-Security-Policy': CSP,
    'X-Content-Type-Options': 'nosniff',
    // No other page may frame this one (clickjacking a Confirm): CSP frame-ancestors, and this for older browsers.
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'no-referrer',
    'Cache-Control': 'no-store',
    'Cross-Origin-Resource-Policy': 'same-origin',
    ...extra,
  });
  res.end(body);
}

function sendJson(res: http.ServerResponse, code: number, value: unknown): void {
  send(res, code, 'application/json; charset=utf-8', JSON.stringify(value));
}

/** What a request asks for, once it passed the checks every request must pass (Host, target, method, Origin). */
interface CheckedRequest {
  method: string;
  url: URL;
  isApi: boolean;
}

/**
 * The page's server for one repository: its secrets (the token and the cookie's value), the session it opens with,
 * and one handler per kind of request. Every endpoint is one API call with `base` (the worktree's top).
 */
class UiSite {
  /** Set once the socket listens: Host and the cookie's name hold it. */
  port = 0;
  readonly token = randomBytes(32).toString('base64url');
  // The cookie's value: it serves the page's files (the same for every user, in the package), nothing else.
  private readonly fileKey = randomBytes(32).toString('base64url');

  constructor(
    private readonly repo: Repo,
    private readonly base: RepoOptions,
    private readonly assets: string,
    private readonly firstSession: string,
  ) {}

  async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const checked = this.check(req);
    if (checked.isApi) await this.serveApi(req, res, checked);
    else this.serveFile(req, res, checked);
  }

  private check(req: http.IncomingMessage): CheckedRequest {
    const host = req.headers.host ?? '';
    // Node keeps the first of two Host headers; such a request is invalid (RFC 9112 3.2), and which one counts is the sender's game.
    let hosts = 0;
    for (let i = 0; i < req.rawHeaders.length; i += 2) if ((req.rawHeaders[i] as string).toLowerCase() === 'host') hosts++;
    if (hosts > 1) throw new HttpError(400, 'more than one Host header');
    // DNS rebinding: a page under another name that resolves to 127.0.0.1 still says its own name here.
    const origin = `http://${host}`;
    if (host !== `${UI_HOST}:${this.port}` && host !== `localhost:${this.port}`)
      throw new HttpError(421, 'this server answers only to 127.0.0.1 and localhost');
    const target = req.url ?? '/';
    // An absolute-form target names the host it is for, whatever Host says (RFC 9112 3.2.2): it must be us too.
    if (!target.startsWith('/')) {
      let named = '';
      try {
        named = new URL(target).host;
      } catch {
        throw new HttpError(400, 'bad request target');
      }
      if (named !== host) throw new HttpError(421, 'this server answers only to 127.0.0.1 and localhost');
    }
    const method = req.method ?? 'GET';
    const url = new URL(target, origin);
    const isApi = url.pathname.startsWith('/api/');
    if (method !== 'GET' && method !== 'HEAD') {
      // CSRF: a form or fetch from another site carries that site's Origin (or none, for some old clients: refused too).
      if (req.headers.origin !== origin) throw new HttpError(403, 'cross-origin request refused');
      if (!isApi || method !== 'POST') throw new HttpError(405, 'method not allowed');
    }
    return { method, url, isApi };
  }

  private async serveApi(req: http.IncomingMessage, res: http.ServerResponse, { method, url }: CheckedRequest): Promise<void> {
    if (!sameToken(req.headers[TOKEN_HEADER] as string | undefined, this.token)) throw new HttpError(401, 'missing or wrong token');
    const name = url.pathname.slice('/api/'.length);
    const mutating = MUTATING.has(name);
    if (mutating !== (method === 'POST')) throw new HttpError(405, mutating ? `${name} takes a POST` : `${name} takes a GET`);
    const body = method === 'POST' ? await readJson(req) : {};
    try {
      sendJson(res, 200, await this.api(name, url.searchParams, body));
    } catch (e) {
      if (e instanceof HttpError) throw e;
      if (e instanceof PlanChanged) {
        sendJson(res, 409, {
          error: { code: 'PlanChanged', message: e.message, hint: 'Look at the new dry run, then confirm again.' },
          dryRun: e.dryRun,
        });
        return;
      }
      const err = isAgentsnapError(e) ? e.toJSON() : { code: 'Internal', message: e instanceof Error ? e.message : String(e) };
      sendJson(res, statusOfError(e), { error: err });
    }
  }

  private serveFile(req: http.IncomingMessage, res: http.ServerResponse, { method, url }: CheckedRequest): void {
    // The page wants the token in its URL (it holds the token for its script); its files, the token or the cookie it set.
    const fromQuery = url.searchParams.get('token');
    const name = url.pathname === '/' ? 'index.html' : url.pathname.slice(1);
    const ok = sameToken(fromQuery, this.token) || (name !== 'index.html' && sameToken(cookieToken(req, this.port), this.fileKey));
    if (!ok) throw new HttpError(401, 'open the URL `agentsnap ui` printed (it holds the token)');
    if (!/^[a-z0-9][a-z0-9._-]*$/i.test(name)) throw new HttpError(404, 'not found');
    const file = path.join(this.assets, name);
    let bytes: Buffer;
    try {
      bytes = fs.readFileSync(file);
    } catch {
      throw new HttpError(404, 'not found');
    }
    const extra: Record<string, string> = {};
    if (sameToken(fromQuery, this.token))
      extra['Set-Cookie'] = `${cookieName(this.port)}=${this.fileKey}; HttpOnly; SameSite=Strict; Path=/`;
    if (name === 'index.html') {
      // The token and the first session for the page's script, in meta tags (no inline script under the CSP).
      const html = bytes
        .toString('utf8')
        .replace('__AGENTSNAP_TOKEN__', escapeAttr(this.token))
        .replace('__AGENTSNAP_SESSION__', escapeAttr(this.firstSession));
      send(res, 200, TYPES['.html'] as string, method === 'HEAD' ? '' : html, extra);
      return;
    }
    send(res, 200, TYPES[path.extname(name)] ?? 'application/octet-stream', method === 'HEAD' ? '' : bytes, extra);
  }

  /** The endpoints: each one API call. */
  private async api(name: string, q: URLSearchParams, body: Record<string, unknown>): Promise<unknown> {
    const base = this.base;
    const common = { ...base, session: str(q.get('session')) ?? str(body.session) };
    switch (name) {
      case 'sessions':
        return sessions(base);
      case 'stamp':
        return { stamp: stamp(this.repo) };
      case 'log':
        return this.log(common, q);
      case 'search':
        return this.search(q);
      case 'show': {
        const r = await show({ ...common, step: num(q.get('step'), 'step') });
        return { step: r.step, what: r.what, diff: r.diff, plan: r.plan, environment: r.environment };
      }
      case 'diff': {
        const from = str(q.get('from'));
        if (!from) throw errors.invalidArgument('diff needs a state to compare from (N, N:pre or 0).');
        const to = str(q.get('to'));
        const r = await diff({ ...common, from, to: to === 'worktree' ? undefined : to, paths: q.getAll('path').filter((p) => p !== '') });
        return { from: r.from, to: r.to, diff: r.diff };
      }
      case 'replay':
        return { entries: (await replay(common)).entries };
      case 'status':
        return status(common);
      case 'undo':
      case 'redo':
      case 'restore':
      case 'revert':
        return this.operation(name, common, body);
      default:
        throw new HttpError(404, `no such endpoint: ${name}`);
    }
  }

  private async log(common: RepoOptions & { session: string | undefined }, q: URLSearchParams): Promise<unknown> {
    const r = await log({ ...common, tool: str(q.get('tool')), grep: str(q.get('grep')), paths: q.getAll('path').filter((p) => p !== '') });
    return {
      session: { ...r.session, steps: r.session.steps.map(brief) },
      source: r.source,
      rows: r.rows.map(({ session: _s, plan: _p, step, ...row }) => ({
        ...row,
        step: brief(step),
        // A failed check's first failure, as `check --each` prints it (the page shows it before the whole output).
        check: row.check && {
          ...row.check,
          firstFailure: row.check.verdict === 'fail' && row.check.output ? firstFailure(row.check.output) : null,
        },
      })),
      // The order of steps and operations (issue 32: the one timeline): a step by its number, an operation whole.
      timeline: r.timeline.map((e) => (e.row ? { step: e.row.step.step } : { op: e.op })),
    };
  }

  private async search(q: URLSearchParams): Promise<unknown> {
    const grep = str(q.get('q'));
    if (!grep) throw errors.invalidArgument('search needs a text to look for.');
    const r = await logAllSessions({ ...this.base, grep });
    return {
      sessions: r.sessions,
      rows: r.rows.map(({ session: s, plan: _p, step, ...row }) => ({ session: s.id, ...row, step: brief(step) })),
    };
  }

  /** undo/redo/restore/revert: a dry run with its plan's id, or the real run of the plan the page confirmed. */
  private async operation(
    name: 'undo' | 'redo' | 'restore' | 'revert',
    common: RepoOptions & { session: string | undefined },
    body: Record<string, unknown>,
  ): Promise<unknown> {
    const op = { ...common, dryRun: body.dryRun === true, force: body.force === true };
    const paths = Array.isArray(body.paths) ? body.paths.filter((p): p is string => typeof p === 'string' && p !== '') : [];
    const call = async (o: typeof op): Promise<unknown> => {
      if (name === 'undo') return undo({ ...o, step: body.step === undefined ? undefined : num(body.step, 'step') });
      if (name === 'redo') return redo(o);
      if (name === 'revert') return revert({ ...o, step: num(body.step, 'step') });
      return restore({ ...o, step: num(body.step, 'step'), after: body.after === true, paths });
    };
    const dryRun = async (force: boolean) => {
      const r = await call({ ...op, dryRun: true, force });
      return { ...(r as object), planId: planId(r) };
    };
    if (op.dryRun) return dryRun(op.force);
    // A Confirm names the plan it was shown: an agent's call (or anything else) since then changes what the
    // operation would do, which the user did not see; the new dry run goes back instead. The real run still
    // makes every check of its own (the user's edits, unprotected steps) under its lock.
    if (typeof body.expect === 'string') {
      // As the page's dry run was: without force (Force is ticked after it, over what it showed).
      const now = await dryRun(false);
      if (now.planId !== body.expect) throw new PlanChanged(now);
    }
    return call(op);
  }
}

/** The session the page opens with: the one named (a wrong name fails here), else this worktree's most recent, else none. */
async function firstSession(base: RepoOptions, named: string | undefined): Promise<string> {
  if (named !== undefined) return (await resolveSession({ ...base, session: named })).session.id;
  try {
    return (await resolveSession(base)).session.id;
  } catch (e) {
    if (!isAgentsnapError(e) || e.code !== 'NoSession') throw e;
    return '';
  }
}

function listen(server: http.Server, port: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) =>
      reject(
        e.code === 'EADDRINUSE'
          ? errors.busy(`port ${port} on ${UI_HOST} is in use.`, { hint: 'Pick another with --port, or leave it out for a free one.' })
          : e.code === 'EACCES'
            ? errors.invalidArgument(`port ${port} on ${UI_HOST} needs a privilege this process does not have (ports below 1024 do).`, {
                hint: 'Pick a port above 1023 with --port, or leave it out for a free one.',
                cause: e,
              })
            : e,
      ),
    );
    server.listen(port, UI_HOST, () => resolve());
  });
}

/** Starts the page's server on 127.0.0.1; resolves when it listens. */
export async function startUiServer(opts: UiServerOptions = {}): Promise<UiServer> {
  const port = opts.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw errors.invalidArgument(`--port must be a port number (0-65535), not ${JSON.stringify(opts.port)}.`);
  const env = opts.env ?? process.env;
  // Opened once: a wrong directory fails here, before anything listens; the stamp reads its state dir.
  const repo = await repoFor({ cwd: opts.cwd, env });
  // The page names paths from the worktree's top (it has no current directory): every call runs there.
  const base: RepoOptions = { cwd: repo.worktree, env };
  const assets = opts.assetsDir ?? path.join(packageRoot(), 'dist', 'ui-page');
  if (!fs.existsSync(path.join(assets, 'index.html'))) {
    throw errors.invalidArgument(`the page's files are missing (${assets}).`, { hint: 'Build the package: npm run build.' });
  }
  const site = new UiSite(repo, base, assets, await firstSession(base, opts.session));
  const server = http.createServer((req, res) => {
    site.handle(req, res).catch((e: unknown) => {
      const code = e instanceof HttpError ? e.status : 500;
      if (!res.headersSent) sendJson(res, code, { error: { code: 'Http', message: e instanceof Error ? e.message : String(e) } });
      else res.destroy();
    });
  });
  await listen(server, port);
  site.port = (server.address() as { port: number }).port;
  return {
    url: `http://${UI_HOST}:${site.port}/?token=${site.token}`,
    port: site.port,
    token: site.token,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
