// A scripted local stand-in for the Anthropic Messages API, so tests can
// drive the real Claude Code binary offline (ANTHROPIC_BASE_URL). Each
// request that offers tools gets the next scripted assistant turn, picked by
// how many assistant messages the conversation already holds; requests
// without tools (titles and other side requests) get a short text.
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';

export interface ScriptedTool {
  name: string;
  input: Record<string, unknown>;
}

export interface ScriptedTurn {
  text?: string;
  tools?: ScriptedTool[];
}

export interface MessagesRequest {
  model?: string;
  stream?: boolean;
  tools?: unknown[];
  messages?: { role: string; content: unknown }[];
}

export interface MessagesStub {
  url: string;
  /** Every POST /v1/messages body that offered tools, in arrival order. */
  requests: MessagesRequest[];
  /** The tool_use blocks sent, in order (id, name, input). */
  toolUses: { id: string; name: string; input: Record<string, unknown> }[];
  close(): Promise<void>;
}

type Block = { type: 'text'; text: string } | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };

function sse(res: http.ServerResponse, event: string, data: unknown): void {
  res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

function respond(res: http.ServerResponse, req: MessagesRequest, blocks: Block[]): void {
  const stopReason = blocks.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn';
  const message = {
    id: `msg_${randomBytes(8).toString('hex')}`,
    type: 'message',
    role: 'assistant',
    model: req.model ?? 'claude-stub',
    content: [] as Block[],
    stop_reason: null as string | null,
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 1 },
  };
  if (!req.stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ...message, content: blocks, stop_reason: stopReason, usage: { input_tokens: 10, output_tokens: 10 } }));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  sse(res, 'message_start', { type: 'message_start', message });
  blocks.forEach((b, index) => {
    if (b.type === 'text') {
      sse(res, 'content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      sse(res, 'content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: b.text } });
    } else {
      sse(res, 'content_block_start', {
        type: 'content_block_start',
        index,
        content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} },
      });
      sse(res, 'content_block_delta', {
        type: 'content_block_delta',
        index,
        delta: { type: 'input_json_delta', partial_json: JSON.stringify(b.input) },
      });
    }
    sse(res, 'content_block_stop', { type: 'content_block_stop', index });
  });
  sse(res, 'message_delta', {
    type: 'message_delta',
    delta: { stop_reason: stopReason, stop_sequence: null },
    usage: { output_tokens: 10 },
  });
  sse(res, 'message_stop', { type: 'message_stop' });
  res.end();
}

export interface MessagesStubOptions {
  /**
   * Other conversations (subagents) get their own script: the first whose
   * marker occurs in the conversation's first user message.
   */
  conversations?: { marker: string; script: ScriptStep[] }[];
}

/** Starts the stand-in on 127.0.0.1 (a free port). */
/** A turn, or what the model answers given the request so far (it reads the tool results, as a model would). */
export type ScriptStep = ScriptedTurn | ((req: MessagesRequest) => ScriptedTurn);

export async function startMessagesStub(script: ScriptStep[], opts: MessagesStubOptions = {}): Promise<MessagesStub> {
  const requests: MessagesRequest[] = [];
  const toolUses: MessagesStub['toolUses'] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://stub');
      let body: MessagesRequest = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as MessagesRequest;
      } catch {
        /* not JSON */
      }
      if (req.method === 'POST' && url.pathname === '/v1/messages/count_tokens') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ input_tokens: 10 }));
        return;
      }
      if (req.method !== 'POST' || url.pathname !== '/v1/messages') {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: 'not in the stub' } }));
        return;
      }
      if (!Array.isArray(body.tools) || body.tools.length === 0) {
        respond(res, body, [{ type: 'text', text: 'Stub title' }]);
        return;
      }
      requests.push(body);
      const turn = (body.messages ?? []).filter((m) => m.role === 'assistant').length;
      const first = JSON.stringify((body.messages ?? []).find((m) => m.role === 'user')?.content ?? '');
      const next = (opts.conversations?.find((c) => first.includes(c.marker))?.script ?? script)[turn];
      const scripted = typeof next === 'function' ? next(body) : next;
      const blocks: Block[] = [];
      if (scripted?.text) blocks.push({ type: 'text', text: scripted.text });
      for (const t of scripted?.tools ?? []) {
        const id = `toolu_${randomBytes(12).toString('hex')}`;
        toolUses.push({ id, name: t.name, input: t.input });
        blocks.push({ type: 'tool_use', id, ...t });
      }
      if (blocks.length === 0) blocks.push({ type: 'text', text: 'Done.' });
      respond(res, body, blocks);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    toolUses,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
