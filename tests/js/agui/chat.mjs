// The chat page's script (bundled into chat.js by esbuild): the AG-UI client (HttpAgent) against `agentmap serve`.
// The page's address names the server and the graph: chat.html?server=http://127.0.0.1:PORT&graph=Chat (and
// &auth=bearer when the token is a user's).
// `document.body.dataset.state` says what it does now (signed-out, idle, running, waiting, error), for the test.
import { HttpAgent } from "@ag-ui/client";

const params = new URLSearchParams(location.search);
const server = params.get("server");
const graph = params.get("graph");
const $ = (id) => document.getElementById(id);
let token = null;
let agent = null;
let count = 0;

const setState = (state) => void (document.body.dataset.state = state);
const say = (text) => void ($("status").textContent = text);
// `&auth=bearer`: the token is the user's, for a server with users (`agentmap serve --auth`); else its API key
const credentials = () => (params.get("auth") === "bearer" ? { Authorization: `Bearer ${token}` } : { "X-Api-Key": token });
const headers = () => ({ "Content-Type": "application/json", ...credentials() });

function show(messages) {
  const items = messages
    .filter((m) => m.role === "user" || m.role === "assistant")
    .map((m) => {
      const li = document.createElement("li");
      li.textContent = m.content ?? "";
      li.dataset.role = m.role;
      return li;
    });
  $("messages").replaceChildren(...items);
}

async function listThreads() {
  const response = await fetch(`${server}/threads/search`, {
    method: "POST",
    headers: headers(),
    body: JSON.stringify({ metadata: { graph_id: graph }, limit: 50 }),
  });
  const found = await response.json();
  if (!response.ok) throw new Error(found.message);
  $("threads").replaceChildren(
    ...found.map((thread) => {
      const button = Object.assign(document.createElement("button"), { type: "button", textContent: thread.thread_id });
      button.addEventListener("click", () => open(thread.thread_id));
      const li = document.createElement("li");
      li.append(button);
      return li;
    }),
  );
}

async function open(threadId) {
  agent = new HttpAgent({ url: `${server}/agui/${graph}`, headers: credentials(), threadId });
  const response = await fetch(`${server}/threads/${threadId}/state`, { headers: headers() });
  const values = response.ok ? (await response.json()).values ?? {} : {};
  agent.setMessages((values.history ?? []).map((m) => ({ id: `h${++count}`, role: m.role, content: m.content })));
  document.body.dataset.thread = threadId;
  show(agent.messages);
  $("question").hidden = true;
  for (const id of ["say", "send"]) $(id).disabled = false;
  setState("idle");
}

async function run(parameters) {
  setState("running");
  say("");
  $("question").hidden = true;
  try {
    await agent.runAgent(parameters, { onMessagesChanged: ({ messages }) => show(messages) });
  } catch (err) {
    say(err.payload?.message ?? err.message);
    setState("error");
    return;
  }
  show(agent.messages);
  await listThreads();
  const [asked] = agent.pendingInterrupts;
  if (asked) {
    $("question-text").textContent = asked.message;
    $("question").hidden = false;
    setState("waiting");
  } else {
    setState("idle");
  }
}

const answer = (approved) =>
  run({ resume: [{ interruptId: agent.pendingInterrupts[0].id, status: "resolved", payload: approved }] });

$("sign-in-button").addEventListener("click", async () => {
  token = $("token").value;
  try {
    await listThreads();
  } catch (err) {
    say(`sign-in refused: ${err.message}`);
    setState("signed-out");
    return;
  }
  $("new-chat").disabled = false;
  setState("signed-in");
});
$("new-chat").addEventListener("click", () => open(crypto.randomUUID()));
$("say-form").addEventListener("submit", (event) => {
  event.preventDefault();
  agent.addMessage({ id: `u${Date.now()}-${++count}`, role: "user", content: $("say").value });
  $("say").value = "";
  run({});
});
$("approve").addEventListener("click", () => answer(true));
$("reject").addEventListener("click", () => answer(false));
