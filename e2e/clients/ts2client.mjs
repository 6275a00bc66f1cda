// A client of the TypeScript SDK v2 (@modelcontextprotocol/client 2.4.0)
// for mcpmux's e2e tests: it connects with the negotiation mode given
// ("pin" to 2026-07-28, "auto" or "legacy") over Streamable HTTP (a URL)
// or stdio (a command and its arguments), answers elicitations with
// {"name": "Ada"}, lists the tools, calls those named in CALLS (a JSON
// object: tool → arguments), and prints what it saw as one JSON line.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const [mode, target, ...args] = process.argv.slice(2);
const versionNegotiation = { mode: mode === 'pin' ? { pin: '2026-07-28' } : mode };
const client = new Client({ name: 'ts2-e2e', version: '1' }, { capabilities: { elicitation: { form: {} } }, versionNegotiation });
let elicited = 0;
client.setRequestHandler('elicitation/create', async () => {
  elicited++;
  return { action: 'accept', content: { name: 'Ada' } };
});
const transport = target.startsWith('http')
  ? new StreamableHTTPClientTransport(new URL(target))
  : new StdioClientTransport({ command: target, args, stderr: 'inherit' });
const out = { calls: {} };
try {
  await client.connect(transport);
  out.version = client.getNegotiatedProtocolVersion();
  out.tools = (await client.listTools()).tools.map(t => t.name);
  for (const [name, a] of Object.entries(JSON.parse(process.env.CALLS || '{}'))) {
    const res = await client.callTool({ name, arguments: a });
    out.calls[name] = { isError: !!res.isError, text: (res.content || []).filter(c => c.type === 'text').map(c => c.text).join('\n') };
  }
  out.elicited = elicited;
} catch (e) {
  out.error = String(e && e.stack || e);
}
console.log(JSON.stringify(out));
await client.close().catch(() => {});
process.exit(0);
