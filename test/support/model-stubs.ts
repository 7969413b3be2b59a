// Scripted local stand-ins for the OpenAI Responses API (Codex CLI,
// `model_providers.<id>.base_url`) and the Gemini API (Gemini CLI,
// GOOGLE_GEMINI_BASE_URL), so tests drive the real agents offline. Each
// request that offers tools gets the next scripted turn, picked by how many
// model turns the conversation already holds.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ScriptedCall {
  name: string;
  input: Record<string, unknown>;
  /** Responses API: the namespace of a namespaced tool (Codex offers an MCP server's tools as one, `mcp__<server>`). */
  namespace?: string;
}

export interface ScriptedTurn {
  text?: string;
  tools?: ScriptedCall[];
}

/** A turn, or what the model answers given the request so far (it reads the tool results, as a model would). */
export type ScriptStep = ScriptedTurn | ((body: Record<string, unknown>) => ScriptedTurn);

const turnOf = (step: ScriptStep | undefined, body: Record<string, unknown>): ScriptedTurn | undefined =>
  typeof step === 'function' ? step(body) : step;

export interface ModelStub {
  url: string;
  /** The tool calls sent, in order (id is the Responses API call_id; empty for Gemini, which has none). */
  calls: { id: string; name: string; input: Record<string, unknown> }[];
  /** Every request body that offered tools, in arrival order (what the model was sent). */
  requests: Record<string, unknown>[];
  close(): Promise<void>;
}

type Responder = (body: Record<string, unknown>, url: URL, res: http.ServerResponse, calls: ModelStub['calls']) => void;

async function serve(respond: Responder): Promise<ModelStub> {
  const calls: ModelStub['calls'] = [];
  const requests: Record<string, unknown>[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
      } catch {
        /* not JSON */
      }
      if (req.method !== 'POST') {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end('{"error":{"message":"not in the stub"}}');
        return;
      }
      if (Array.isArray(body.tools) && body.tools.length > 0) requests.push(body);
      respond(body, new URL(req.url ?? '/', 'http://stub'), res, calls);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** POST /v1/responses, streamed: `response.output_item.done` with `function_call` items (Codex runs `exec_command` as its Bash tool). */
export function startResponsesStub(script: ScriptStep[]): Promise<ModelStub> {
  let n = 0;
  return serve((body, url, res, calls) => {
    if (!url.pathname.endsWith('/responses')) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"not in the stub"}}');
      return;
    }
    // Requests without tools (none seen so far) would be side requests: they do not advance the script.
    const offersTools = Array.isArray(body.tools) && body.tools.length > 0;
    const turn = offersTools ? (turnOf(script[n], body) ?? { text: 'Done.' }) : { text: 'Stub.' };
    n++;
    const ev = (type: string, data: Record<string, unknown>) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const id = `resp_${n}`;
    ev('response.created', { response: { id } });
    if (turn.text)
      ev('response.output_item.done', {
        item: { type: 'message', role: 'assistant', id: `msg_${n}`, content: [{ type: 'output_text', text: turn.text }] },
      });
    for (const [i, t] of (turn.tools ?? []).entries()) {
      const callId = `call_${n}_${i}`;
      if (!offersTools) continue;
      calls.push({ id: callId, name: t.name, input: t.input });
      ev('response.output_item.done', {
        item: {
          type: 'function_call',
          id: `fc_${n}_${i}`,
          call_id: callId,
          name: t.name,
          ...(t.namespace ? { namespace: t.namespace } : {}),
          arguments: JSON.stringify(t.input),
        },
      });
    }
    ev('response.completed', { response: { id, usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } } });
    res.end();
  });
}

/** POST /v1beta/models/<model>:streamGenerateContent (SSE) and :generateContent, with `functionCall` parts. */
export function startGeminiStub(script: ScriptStep[]): Promise<ModelStub> {
  return serve((body, url, res, calls) => {
    if (!/:(stream)?generateContent$/i.test(url.pathname)) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"totalTokens":1}');
      return;
    }
    const contents = Array.isArray(body.contents) ? (body.contents as { role?: string }[]) : [];
    const offersTools = Array.isArray(body.tools) && body.tools.length > 0;
    // Side requests (no tools: routing, next-speaker checks) get a short JSON-ish text.
    const turn: ScriptedTurn = offersTools
      ? (turnOf(script[contents.filter((c) => c.role === 'model').length], body) ?? { text: 'Done.' })
      : { text: '{"next_speaker":"user","reasoning":"done"}' };
    const parts: Record<string, unknown>[] = [];
    if (turn.text) parts.push({ text: turn.text });
    for (const t of turn.tools ?? []) {
      if (offersTools) calls.push({ id: '', name: t.name, input: t.input });
      parts.push({ functionCall: { name: t.name, args: t.input } });
    }
    const chunk = {
      candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }],
      usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1, totalTokenCount: 2 },
    };
    if (url.pathname.toLowerCase().includes('stream')) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      res.end();
    } else {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(chunk));
    }
  });
}
