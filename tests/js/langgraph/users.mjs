// Two users of `agentmap serve --auth` with LangGraph's own JavaScript client, each sending their token
// (defaultHeaders); prints what each saw as one JSON document. Usage: node users.mjs URL
import { Client } from "@langchain/langgraph-sdk";

const url = process.argv[2];
const as = (token) => new Client({ apiUrl: url, defaultHeaders: { Authorization: `Bearer ${token}` } });
const ada = as("ada-token");
const bo = as("bo-token");
const status = async (call) => {
  try {
    await call();
    return "no error";
  } catch (error) {
    return String(error.status ?? error.message);
  }
};
const seen = {};

const thread = await ada.threads.create();
seen.owner = thread.metadata.owner;
seen.waited = await ada.runs.wait(thread.thread_id, "HelloWorld", { input: { name: "Ada" } });
seen.bo = {
  get: await status(() => bo.threads.get(thread.thread_id)),
  state: await status(() => bo.threads.getState(thread.thread_id)),
  run: await status(() => bo.runs.wait(thread.thread_id, "HelloWorld", { input: { name: "Bo" } })),
  runs: await status(() => bo.runs.list(thread.thread_id)),
  search: (await bo.threads.search({ limit: 100 })).map((t) => t.thread_id),
};
seen.ada = (await ada.threads.search({ limit: 100 })).map((t) => t.thread_id);
seen.thread = thread.thread_id;
seen.nobody = await status(() => new Client({ apiUrl: url }).threads.search());
await ada.store.putItem(["notes"], "k", { text: "ada's" });
seen.items = {
  ada: (await ada.store.getItem(["notes"], "k"))?.value ?? null,
  bo: (await bo.store.getItem(["notes"], "k"))?.value ?? null,
};
console.log(JSON.stringify(seen));
