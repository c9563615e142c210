// The official MCP SDK's client driving `eden mcp` (tests/it/mcp.rs): it connects over stdio,
// lists the tools (each input schema compiled by ajv), starts a run and waits for it with
// progress, reads its record as a resource, steers a live run, asks for a merge it was not
// allowed, cancels a call, and prints what it saw as one JSON object.
//   node client.mjs SDK_DIR EDEN REPO
const [sdk, eden, repo] = process.argv.slice(2);
const { Client } = await import(`${sdk}/node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.js`);
const { StdioClientTransport } = await import(`${sdk}/node_modules/@modelcontextprotocol/sdk/dist/esm/client/stdio.js`);
const Ajv = (await import(`${sdk}/node_modules/ajv/dist/ajv.js`)).default;

const seen = {};
const transport = new StdioClientTransport({ command: eden, args: ['mcp'], cwd: repo, env: process.env, stderr: 'inherit' });
const client = new Client({ name: 'eden-test', version: '1.0.0' });
await client.connect(transport);
seen.server = client.getServerVersion();
seen.capabilities = client.getServerCapabilities();

const { tools } = await client.listTools();
const ajv = new Ajv({ strict: false });
seen.tools = tools.map((tool) => {
  ajv.compile(tool.inputSchema);
  return tool.name;
});

// A run, waited for, its progress heard.
const progress = [];
const ran = await client.callTool(
  { name: 'run', arguments: { manifest: 'plans/quick.toml', wait: true } },
  undefined,
  { onprogress: (p) => progress.push(p), timeout: 120000 },
);
seen.ran = ran.structuredContent;
seen.progress = progress;
const id = ran.structuredContent.runs[0];

// Its record, as a resource.
const { resources } = await client.listResources();
seen.listed = resources.some((r) => r.uri === `eden://runs/${id}`);
const record = await client.readResource({ uri: `eden://runs/${id}` });
seen.record_id = JSON.parse(record.contents[0].text).id;

// Its events, bounded, and its diff.
const shown = await client.callTool({ name: 'show', arguments: { run: id, max_events: 5 } });
seen.shown = { events: shown.structuredContent.events.length, next: shown.structuredContent.next, more: shown.structuredContent.more };
const diff = await client.callTool({ name: 'diff', arguments: { run: id } });
seen.diff = diff.structuredContent;

// A live run, steered.
const live = await client.callTool({ name: 'run', arguments: { manifest: 'plans/steer.toml' } });
const liveId = live.structuredContent.runs[0];
const deadline = Date.now() + 60000;
let steered;
while (Date.now() < deadline) {
  const status = await client.callTool({ name: 'status', arguments: {} });
  const mine = status.structuredContent.runs.find((r) => r.id === liveId);
  if (mine && mine.iteration >= 1) {
    steered = await client.callTool({ name: 'steer', arguments: { run: liveId, prompt: 'STEERED: write it down' } });
    if (!steered.isError) break;
  }
  await new Promise((r) => setTimeout(r, 200));
}
seen.steered = steered && steered.structuredContent;
let ended;
while (Date.now() < deadline + 60000) {
  const status = await client.callTool({ name: 'status', arguments: { run: liveId } });
  ended = status.structuredContent.runs[0];
  if (!ended.live) break;
  await new Promise((r) => setTimeout(r, 200));
}
seen.steered_end = ended;

// A merge it was not allowed.
const merge = await client.callTool({ name: 'merge', arguments: { run: id } });
seen.merge = { isError: merge.isError, text: merge.content[0].text };

// A call cancelled: the client stops waiting, the server goes on answering.
const controller = new AbortController();
const waiting = client.callTool(
  { name: 'run', arguments: { manifest: 'plans/slow.toml', wait: true } },
  undefined,
  { signal: controller.signal, timeout: 120000 },
);
setTimeout(() => controller.abort('enough'), 1500);
try {
  await waiting;
  seen.cancelled = 'answered';
} catch (error) {
  seen.cancelled = String(error);
}
await client.ping();
const after = await client.callTool({ name: 'status', arguments: {} });
seen.after_cancel_live = after.structuredContent.runs.length;
for (const run of after.structuredContent.runs) {
  await client.callTool({ name: 'stop', arguments: { run: run.id } });
}

await client.close();
console.log(JSON.stringify(seen));
