// The AG-UI client (@ag-ui/client, HttpAgent) against `agentmap serve`: a chat of two turns on one thread, a pause
// answered yes and one answered no (AG-UI's resume entries), an answer that does not fit, an unknown assistant.
// Prints what it saw as one JSON document (tests/protocols/test_agui_js.py checks it).
import { HttpAgent } from "@ag-ui/client";

const url = process.argv[2];
let count = 0;
const said = (agent, text) => agent.addMessage({ id: `u${++count}`, role: "user", content: text });
const texts = (agent) => agent.messages.filter((m) => m.role === "assistant").map((m) => m.content);

async function run(agent, parameters = {}) {
  const events = [];
  const custom = [];
  const subscriber = {
    onEvent: ({ event }) => void events.push(event.type),
    onCustomEvent: ({ event }) => void custom.push([event.name, JSON.parse(event.value)]),
  };
  try {
    const { result } = await agent.runAgent(parameters, subscriber);
    return { events, custom, result };
  } catch (err) {
    return { events, custom, error: { status: err.status, code: err.payload?.code, message: err.message } };
  }
}

const seen = {};

// Two turns of a chat on one thread: the graph's memory (chat_history) is the thread's.
const chat = new HttpAgent({ url: `${url}/agui/LLMOfflineDemo`, threadId: "chat-1" });
said(chat, "please title case hello world");
const first = await run(chat);
said(chat, "please reverse text abc");
const second = await run(chat);
seen.chat = {
  first: first.events,
  replies: texts(chat),
  history: chat.state.chat_history.length,
  error: second.error ?? null,
};

// A pause: the question as AG-UI's interrupt, answered yes through a resume entry.
const review = new HttpAgent({ url: `${url}/agui/Review`, threadId: "review-yes" });
said(review, "tea");
const paused = await run(review);
const [interrupt] = review.pendingInterrupts;
seen.paused = { events: paused.events, custom: paused.custom, interrupt, pending: review.pendingInterrupts.length };
const refused = await run(review, { resume: [{ interruptId: interrupt.id, status: "resolved", payload: "maybe" }] });
seen.refused = { error: refused.error, pending: review.pendingInterrupts.length };
const yes = await run(review, { resume: [{ interruptId: interrupt.id, status: "resolved", payload: "yes" }] });
seen.yes = { approved: yes.result.approved, state: review.state.approved, pending: review.pendingInterrupts.length };

// Another thread answered no: a rejection, never read as yes.
const other = new HttpAgent({ url: `${url}/agui/Review`, threadId: "review-no" });
said(other, "cake");
await run(other);
const no = await run(other, {
  resume: [{ interruptId: other.pendingInterrupts[0].id, status: "resolved", payload: { approved: "no" } }],
});
seen.no = { approved: no.result.approved };

// An unknown assistant.
const unknown = new HttpAgent({ url: `${url}/agui/NoSuchGraph`, threadId: "t-unknown" });
said(unknown, "hi");
seen.unknown = (await run(unknown)).error;
console.log(JSON.stringify(seen));
