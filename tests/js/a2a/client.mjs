// The JavaScript A2A client (@a2a-js/sdk) against `agentmap serve`: card, send, stream, pause and answer, get,
// cancel, and an unknown task. Prints what it saw as one JSON document (tests/server/test_a2a.py checks it).
import { ClientFactory } from "@a2a-js/sdk/client";
import { Role, TaskState } from "@a2a-js/sdk";

const url = process.argv[2];
const text = (value) => ({ content: { $case: "text", value }, metadata: undefined, filename: "", mediaType: "" });
const data = (value) => ({ content: { $case: "data", value }, metadata: undefined, filename: "", mediaType: "" });
let count = 0;
const message = (parts, task) => ({
  message: {
    messageId: `js-${++count}`,
    role: Role.ROLE_USER,
    parts,
    contextId: task ? task.contextId : "",
    taskId: task ? task.id : "",
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  },
  configuration: undefined,
  metadata: undefined,
  tenant: "",
});
const partText = (parts) => parts.filter((p) => p.content?.$case === "text").map((p) => p.content.value);
const partData = (parts) => parts.filter((p) => p.content?.$case === "data").map((p) => p.content.value);
const taskOf = (response) => (response.payload ? response.payload.value : response);

const factory = new ClientFactory();
const seen = {};
const hello = await factory.createFromUrl(`${url}/a2a/HelloWorld/.well-known/agent-card.json`, "");
const sent = taskOf(await hello.sendMessage(message([text("Ada")])));
seen.state = TaskState[sent.status.state];
seen.greeting = partData(sent.artifacts[0].parts)[0].greeting;
seen.got = TaskState[(await hello.getTask({ id: sent.id, historyLength: undefined, tenant: "" })).status.state];
seen.streamed = [];
for await (const event of hello.sendMessageStream(message([data({ name: "Bo" })]))) {
  if (event.payload?.$case === "statusUpdate") {
    const update = event.payload.value;
    seen.streamed.push(`${TaskState[update.status.state]}:${partText(update.status.message?.parts ?? []).join("")}`);
  }
}
try {
  await hello.getTask({ id: "no-such-task", historyLength: undefined, tenant: "" });
  seen.unknown = "found";
} catch (err) {
  seen.unknown = err.constructor.name;
}
const review = await factory.createFromUrl(`${url}/a2a/Review/.well-known/agent-card.json`, "");
const paused = taskOf(await review.sendMessage(message([text("tea")])));
seen.paused = TaskState[paused.status.state];
seen.question = partText(paused.status.message.parts)[0];
const answered = taskOf(await review.sendMessage(message([text("yes")], paused)));
seen.answered = TaskState[answered.status.state];
seen.approved = partData(answered.artifacts[0].parts)[0].approved;
console.log(JSON.stringify(seen));
