// The TypeScript SDK 1.x client (@modelcontextprotocol/sdk 1.32.2) of
// scripts/client-matrix: it connects to a Streamable HTTP URL or a stdio
// command, runs the operations the matrix gives it (OPS, a JSON object)
// and prints their outcomes, by operation, as one JSON line: the same
// reduction as the matrix's Go clients.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [target, ...args] = process.argv.slice(2);
const ops = JSON.parse(process.env.OPS);
const client = new Client({ name: 'client-matrix', version: '1' }, { capabilities: {} });
const transport = target.startsWith('http')
  ? new StreamableHTTPClientTransport(new URL(target))
  : new StdioClientTransport({ command: target, args, stderr: 'ignore' });
const out = {};
const names = (items, f) => items.map(f).sort().join(',');
const text = c => c.type === 'text' ? c.text : c.type === 'image' ? `image ${c.mimeType}` : c.type === 'resource' ? `resource ${c.resource.uri}` : c.type === 'resource_link' ? `link ${c.uri}` : c.type;
const errText = e => { const s = String(e && e.message || e); const i = s.indexOf('code'); return 'error: ' + (e && e.code !== undefined ? `code ${e.code}` : i >= 0 ? s.slice(i) : s); };
const content = r => {
  let s = (r.content || []).map(text).join(' | ');
  if (r.structuredContent !== undefined) s += ' structured:' + JSON.stringify(r.structuredContent);
  return r.isError ? 'isError: ' + s : s;
};
const run = async (op, f) => { try { out[op] = await f(); } catch (e) { out[op] = errText(e); } };
try {
  await client.connect(transport);
  out['initialize: protocol'] = transport.protocolVersion ?? '(not told over stdio)';
  await run('tools/list', async () => names((await client.listTools()).tools, t => t.name));
  await run('prompts/list', async () => names((await client.listPrompts()).prompts, p => p.name));
  await run('resources/list', async () => names((await client.listResources()).resources, r => r.uri));
  await run('resources/templates/list', async () => names((await client.listResourceTemplates()).resourceTemplates, t => t.uriTemplate));
  for (const c of ops.calls) await run('tools/call ' + c.tool, async () => content(await client.callTool({ name: c.tool, arguments: c.args })));
  let progress = 0;
  await run('tools/call trigger-long-running-operation', async () => {
    const r = await client.callTool({ name: 'trigger-long-running-operation', arguments: ops.longRunning }, undefined, { onprogress: () => progress++ });
    // What arrived is compared, not when its handler ran (see settleProgress in scripts/client-matrix).
    for (const end = Date.now() + 2000; progress < ops.longRunning.steps && Date.now() < end;) await new Promise(r => setTimeout(r, 10));
    return `${content(r)}; progress ${progress}`;
  });
  for (const p of ops.prompts) await run('prompts/get ' + p.name, async () =>
    (await client.getPrompt({ name: p.name, arguments: p.args || undefined })).messages.map(m => `${m.role}:${text(m.content)}`).join(' | '));
  for (const uri of ops.reads) await run('resources/read ' + uri, async () =>
    (await client.readResource({ uri })).contents.map(c => `${c.mimeType}:${c.text ?? ''}`).join(' | '));
  await run('completion/complete', async () => (await client.complete({ ref: { type: 'ref/prompt', name: 'completable-prompt' }, argument: { name: 'department', value: 'E' } })).completion.values.join(','));
  await run('logging/setLevel', async () => { await client.setLoggingLevel('debug'); return 'ok'; });
  await run('ping', async () => { await client.ping(); return 'ok'; });
} catch (e) {
  out.error = String(e && e.stack || e);
}
console.log(JSON.stringify(out));
await client.close().catch(() => {});
process.exit(0);
