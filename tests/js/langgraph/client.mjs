// Drives `agentmap serve` with LangGraph's own JavaScript client; prints what it saw as one JSON document.
// Usage: node client.mjs URL
import { Client } from "@langchain/langgraph-sdk";

const client = new Client({ apiUrl: process.argv[2] });
const seen = {};

seen.graphs = (await client.assistants.search({ limit: 100 })).map((a) => a.graph_id).sort();

const thread = await client.threads.create();
seen.waited = await client.runs.wait(thread.thread_id, "HelloWorld", { input: { name: "Ada" } });
seen.state = (await client.threads.getState(thread.thread_id)).values;

seen.events = [];
for await (const chunk of client.runs.stream(null, "HelloWorld", { input: { name: "Bo" }, streamMode: "updates" })) {
  seen.events.push(chunk.event === "updates" ? `updates:${Object.keys(chunk.data).join(",")}` : chunk.event);
}

const asked = await client.threads.create();
const paused = await client.runs.wait(asked.thread_id, "Ask", { input: {} });
seen.question = paused.__interrupt__?.[0]?.value?.question ?? null;
seen.answered = await client.runs.wait(asked.thread_id, "Ask", { command: { resume: "Cy" } });

const busy = await client.threads.create();
const slow = await client.runs.create(busy.thread_id, "Slow", { input: { topic: "t" } });
await client.runs.cancel(busy.thread_id, slow.run_id, true); // waits until it has stopped
seen.cancelled = (await client.runs.get(busy.thread_id, slow.run_id)).status;
const joined = await client.runs.create(busy.thread_id, "Slow", { input: { topic: "u" } });
seen.joined = (await client.runs.join(busy.thread_id, joined.run_id)).third ?? null;

await client.store.putItem(["notes", "js"], "k1", { text: "from node" });
seen.item = (await client.store.getItem(["notes", "js"], "k1"))?.value ?? null;

try {
  await client.assistants.get("Nope");
  seen.unknown = "no error";
} catch (error) {
  seen.unknown = String(error.status ?? error.message);
}

console.log(JSON.stringify(seen));
