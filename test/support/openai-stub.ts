// A scripted local stand-in for the OpenAI Chat Completions API (Qwen Code's
// OPENAI_BASE_URL; loopback only): POST …/chat/completions, streamed (SSE
// chunks with `tool_calls` deltas, then [DONE]) or plain JSON, and GET
// …/models. Each request that offers tools gets the scripted turn picked by
// how many assistant turns its conversation already holds.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ModelStub, ScriptStep, ScriptedTurn } from './model-stubs.js';

export interface ChatCompletionsStub extends ModelStub {
  /** The tool names offered in each request that offered tools. */
  toolsOffered: string[][];
}

export async function startChatCompletionsStub(script: ScriptStep[], model = 'test-model'): Promise<ChatCompletionsStub> {
  const calls: ModelStub['calls'] = [];
  const requests: Record<string, unknown>[] = [];
  const toolsOffered: string[][] = [];
  let seq = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://stub');
      if (req.method === 'GET' && url.pathname.endsWith('/models')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: [{ id: model, object: 'model', owned_by: 'stub' }] }));
        return;
      }
      if (req.method !== 'POST' || !url.pathname.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end('{"error":{"message":"not in the stub"}}');
        return;
      }
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
      } catch {
        /* not JSON */
      }
      const tools = Array.isArray(body.tools) ? (body.tools as { function?: { name?: string } }[]) : [];
      const offersTools = tools.length > 0;
      if (offersTools) {
        requests.push(body);
        toolsOffered.push(tools.map((t) => String(t.function?.name)));
      }
      const messages = Array.isArray(body.messages) ? (body.messages as { role?: string }[]) : [];
      const step = script[messages.filter((m) => m.role === 'assistant').length];
      const turn: ScriptedTurn = offersTools ? ((typeof step === 'function' ? step(body) : step) ?? { text: 'Done.' }) : { text: 'ok' };
      const id = `chatcmpl-${++seq}`;
      const toolCalls = (offersTools ? (turn.tools ?? []) : []).map((t, i) => {
        const callId = `call_${seq}_${i}`;
        calls.push({ id: callId, name: t.name, input: t.input });
        return { index: i, id: callId, type: 'function', function: { name: t.name, arguments: JSON.stringify(t.input) } };
      });
      const finish = toolCalls.length > 0 ? 'tool_calls' : 'stop';
      const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
      const base = { id, created: Math.floor(Date.now() / 1000), model };
      if (body.stream === true) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const send = (delta: Record<string, unknown>, finishReason: string | null, extra: Record<string, unknown> = {}) =>
          res.write(
            `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finishReason }], ...extra })}\n\n`,
          );
        send({ role: 'assistant', content: turn.text ?? '' }, null);
        // Each call in two deltas (name, then its arguments), as the real API streams them.
        for (const c of toolCalls) {
          send({ tool_calls: [{ index: c.index, id: c.id, type: 'function', function: { name: c.function.name, arguments: '' } }] }, null);
          send({ tool_calls: [{ index: c.index, function: { arguments: c.function.arguments } }] }, null);
        }
        send({}, finish, { usage });
        res.write('data: [DONE]\n\n');
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      const message = {
        role: 'assistant',
        content: turn.text ?? null,
        ...(toolCalls.length ? { tool_calls: toolCalls.map(({ index: _i, ...c }) => c) } : {}),
      };
      res.end(JSON.stringify({ ...base, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: finish }], usage }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    calls,
    requests,
    toolsOffered,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
