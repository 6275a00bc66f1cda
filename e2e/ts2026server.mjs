// A server of the TypeScript SDK v2 (@modelcontextprotocol/server 2.4.0)
// over Streamable HTTP, for the e2e tests of MCP 2026-07-28 servers:
// node ts2026server.mjs <stateless|reject>. It serves createMcpHandler with
// that legacy posture and prints its URL. Tools: greet, ask (an
// elicitation as an input request), grow (adds the tool grown).
import http from 'node:http';
import { McpServer, acceptedContent, createMcpHandler, fromJsonSchema, inputRequired } from '@modelcontextprotocol/server';

const legacy = process.argv[2] === 'reject' ? 'reject' : 'stateless';
const name = `ts-${legacy}`;
let grown = false;
const object = (props = {}) => fromJsonSchema({ type: 'object', properties: props });
const text = (t) => ({ content: [{ type: 'text', text: t }] });

const handler = createMcpHandler(() => {
    const server = new McpServer({ name, version: '1' }, { capabilities: { tools: { listChanged: true } } });
    server.registerTool('greet', { inputSchema: object({ name: { type: 'string' } }) }, async (args) => text(`${name} greets ${args.name}`));
    server.registerTool('ask', { inputSchema: object() }, async (_args, ctx) => {
        const answer = acceptedContent(ctx.mcpReq.inputResponses, 'color');
        if (answer) {
            return text(`${name}: accept, color ${answer.color}`);
        }
        return inputRequired({
            inputRequests: {
                color: inputRequired.elicit({
                    message: 'Your favourite colour?',
                    requestedSchema: { type: 'object', properties: { color: { type: 'string' } }, required: ['color'] }
                })
            }
        });
    });
    server.registerTool('grow', { inputSchema: object() }, async () => {
        grown = true;
        setTimeout(() => handler.notify.toolsChanged(), 0);
        return text(`${name} grew a tool`);
    });
    if (grown) {
        server.registerTool('grown', { inputSchema: object() }, async () => text(`${name}: grown`));
    }
    return server;
}, { legacy });

const srv = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks);
    const request = new Request(`http://${req.headers.host}${req.url}`, {
        method: req.method,
        headers: req.headers,
        body: req.method === 'GET' || req.method === 'HEAD' ? undefined : body
    });
    const ctrl = new AbortController();
    res.on('close', () => ctrl.abort());
    const response = await handler.fetch(request);
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (!response.body) {
        res.end();
        return;
    }
    try {
        for await (const chunk of response.body) {
            res.write(chunk);
        }
    } catch {
        // the client went away
    }
    res.end();
});
srv.listen(0, '127.0.0.1', () => {
    console.error(`url=http://127.0.0.1:${srv.address().port}/mcp`);
});
