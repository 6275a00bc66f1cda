// A client of the TypeScript SDK v2 (@modelcontextprotocol/client 2.4.0),
// or of the TypeScript SDK 1.32.2 (mode "sdk1", which speaks 2025-11-25),
// for mcpmux's e2e tests: it connects with the negotiation mode given
// ("pin" to 2026-07-28, "auto" or "legacy") over Streamable HTTP (a URL)
// or stdio (a command and its arguments), answers the question "Your
// favourite colour?" with {"color": "teal"} and other elicitations with
// {"name": "Ada"}, lists the tools, calls those named in CALLS (a JSON
// object: tool → arguments), then, if GROW is set, calls the tool GROW
// with {"name": GROWN} and waits (at most 60 s) to hear of a tool list
// holding a tool ending in "__" + GROWN, and prints what it saw as one
// JSON line.
const [mode, target, ...args] = process.argv.slice(2);
const sdk1 = mode === 'sdk1';
const { Client, StreamableHTTPClientTransport } = sdk1
  ? { ...(await import('@modelcontextprotocol/sdk/client/index.js')), ...(await import('@modelcontextprotocol/sdk/client/streamableHttp.js')) }
  : await import('@modelcontextprotocol/client');
const { StdioClientTransport } = await import(sdk1 ? '@modelcontextprotocol/sdk/client/stdio.js' : '@modelcontextprotocol/client/stdio');
const grow = process.env.GROW, grown = process.env.GROWN;
let heard;
const changed = new Promise(resolve => { heard = resolve; });
const options = {
  capabilities: { elicitation: { form: {} } },
  listChanged: {
    tools: {
      debounceMs: 0,
      onChanged: (error, tools) => {
        if (!error && tools && tools.some(t => t.name.endsWith('__' + grown))) heard(tools.map(t => t.name));
      },
    },
  },
};
if (!sdk1) options.versionNegotiation = { mode: mode === 'pin' ? { pin: '2026-07-28' } : mode };
const client = new Client({ name: 'ts-e2e', version: '1' }, options);
let elicited = 0;
const elicit = async req => {
  elicited++;
  if (req.params.message === 'Your favourite colour?') return { action: 'accept', content: { color: 'teal' } };
  return { action: 'accept', content: { name: 'Ada' } };
};
if (sdk1) {
  const { ElicitRequestSchema } = await import('@modelcontextprotocol/sdk/types.js');
  client.setRequestHandler(ElicitRequestSchema, elicit);
} else {
  client.setRequestHandler('elicitation/create', elicit);
}
const transport = target.startsWith('http')
  ? new StreamableHTTPClientTransport(new URL(target))
  : new StdioClientTransport({ command: target, args, stderr: 'inherit' });
const out = { calls: {} };
try {
  await client.connect(transport);
  out.version = sdk1 ? (transport.protocolVersion ?? 'initialized') : client.getNegotiatedProtocolVersion();
  out.tools = (await client.listTools()).tools.map(t => t.name);
  for (const [name, a] of Object.entries(JSON.parse(process.env.CALLS || '{}'))) {
    const res = await client.callTool({ name, arguments: a });
    out.calls[name] = { isError: !!res.isError, text: (res.content || []).filter(c => c.type === 'text').map(c => c.text).join('\n') };
  }
  out.elicited = elicited;
  if (grow) {
    await client.callTool({ name: grow, arguments: { name: grown } });
    let timer;
    const timeout = new Promise(resolve => { timer = setTimeout(() => resolve(null), 60000); });
    out.grown = await Promise.race([changed, timeout]);
    clearTimeout(timer);
  }
} catch (e) {
  out.error = String(e && e.stack || e);
}
console.log(JSON.stringify(out));
await client.close().catch(() => {});
process.exit(0);
