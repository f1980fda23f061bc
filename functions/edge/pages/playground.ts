import { ApiError, createApiClient, type Agent, type ApiClient, type Message, type Session } from '../../../clients/typescript/index.ts';
import { storedKeyName } from './stored-key.ts';

/**
 * The playground: a key, agents with tools, a chat whose reply streams token by token, the organization's events
 * live, and the session's analysis once it exists. Plain DOM, the typed client for every call.
 */
const root = document.querySelector<HTMLElement>('#playground') as HTMLElement;
root.innerHTML = `
<header><h1>Agent Platform playground</h1><p><a href="/docs">API reference</a> · <a href="/openapi.json">openapi.json</a></p></header>
<main>
  <section aria-labelledby="key-heading">
    <h2 id="key-heading">API key</h2>
    <form id="key-form">
      <label for="api-key">Key (kept in this tab's session storage only)</label>
      <input id="api-key" name="key" type="password" autocomplete="off" required>
      <button type="submit">Use this key</button>
    </form>
    <p id="key-status" role="status"></p>
  </section>
  <section aria-labelledby="agents-heading">
    <h2 id="agents-heading">Agents</h2>
    <ul id="agents"></ul>
    <form id="agent-form">
      <fieldset><legend>New agent</legend>
        <label for="agent-name">Name</label><input id="agent-name" required value="Playground agent">
        <label for="agent-role">Role</label><input id="agent-role" required value="A helpful assistant">
        <label for="tool-name">Tool name (optional)</label><input id="tool-name" placeholder="get_weather" pattern="[A-Za-z0-9]+(_[A-Za-z0-9]+)*">
        <label for="tool-url">Tool URL (GET; {{name}} placeholders take the call's arguments)</label><input id="tool-url" type="url" placeholder="https://example.com/weather/{{city}}">
        <button type="submit">Create agent</button>
      </fieldset>
    </form>
  </section>
  <section aria-labelledby="chat-heading">
    <h2 id="chat-heading">Chat</h2>
    <p id="session-status" role="status">No session.</p>
    <button id="open-session" type="button" disabled>Open a session with the selected agent</button>
    <ol id="transcript" aria-live="polite"></ol>
    <form id="message-form">
      <label for="message">Message</label>
      <textarea id="message" rows="2" required></textarea>
      <button id="send" type="submit" disabled>Send</button>
    </form>
    <button id="close-session" type="button" disabled>Close the session</button>
    <section aria-labelledby="analysis-heading"><h3 id="analysis-heading">Analysis</h3><pre id="analysis">None yet.</pre></section>
  </section>
  <section aria-labelledby="events-heading">
    <h2 id="events-heading">Events</h2>
    <ol id="events" aria-live="polite"></ol>
  </section>
</main>`;

const element = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const keyInput = element<HTMLInputElement>('api-key');
const keyStatus = element('key-status');
const agentList = element<HTMLUListElement>('agents');
const sessionStatus = element('session-status');
const transcript = element<HTMLOListElement>('transcript');
const eventList = element<HTMLOListElement>('events');
const analysisView = element('analysis');
const buttons = {
  open: element<HTMLButtonElement>('open-session'),
  send: element<HTMLButtonElement>('send'),
  close: element<HTMLButtonElement>('close-session'),
};

let client: ApiClient | undefined;
let selectedAgent: Agent | undefined;
let session: Session | undefined;
let shownMessages = 0;
let eventsAbort: AbortController | undefined;

function show(target: HTMLElement, text: string): void {
  target.textContent = text;
}

function describeError(error: unknown): string {
  if (error instanceof ApiError) return `${error.status} ${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

/** Unwraps an openapi-fetch answer: its data, or the API's error envelope thrown as an ApiError. */
function ok<Data>(answer: { data?: Data; error?: unknown }): Data {
  if (answer.error) throw new ApiError(answer.error as ConstructorParameters<typeof ApiError>[0]);
  return answer.data as Data;
}

function listItem(list: HTMLElement, text: string, className = ''): HTMLLIElement {
  const item = document.createElement('li');
  item.textContent = text;
  if (className) item.className = className;
  list.append(item);
  return item;
}

async function useKey(key: string): Promise<void> {
  sessionStorage.setItem(storedKeyName, key);
  client = createApiClient({ baseUrl: location.origin, apiKey: key });
  try {
    await refreshAgents();
    show(keyStatus, 'Key accepted.');
    followEvents();
  } catch (error) {
    show(keyStatus, `Key refused: ${describeError(error)}`);
  }
}

async function refreshAgents(): Promise<void> {
  const page = ok(await (client as ApiClient).GET('/v1/chat/agents', { params: { query: { limit: '100' } } }));
  agentList.replaceChildren();
  for (const agent of page.data) {
    const item = document.createElement('li');
    const button = document.createElement('button');
    button.type = 'button';
    button.textContent = `${agent.fullName} (${agent.tools.length} tool${agent.tools.length === 1 ? '' : 's'})`;
    button.setAttribute('aria-pressed', String(agent.id === selectedAgent?.id));
    button.addEventListener('click', () => selectAgent(agent));
    item.append(button);
    agentList.append(item);
  }
}

function selectAgent(agent: Agent): void {
  selectedAgent = agent;
  buttons.open.disabled = false;
  for (const button of agentList.querySelectorAll('button')) button.setAttribute('aria-pressed', String(button.textContent?.startsWith(`${agent.fullName} (`)));
}

async function createAgent(event: SubmitEvent): Promise<void> {
  event.preventDefault();
  const api = client as ApiClient;
  const value = (id: string) => element<HTMLInputElement>(id).value.trim();
  try {
    const tools: { toolId: string }[] = [];
    if (value('tool-name')) {
      const tool = ok(
        await api.POST('/v1/chat/tools', {
          body: {
            name: value('tool-name'),
            description: `Calls ${value('tool-url')}`,
            type: 'API_TOOL',
            apiTool: { url: value('tool-url'), method: 'GET' },
            ajvPropertiesSchema: { type: 'object', properties: {}, additionalProperties: true },
          },
        }),
      );
      tools.push({ toolId: tool.id });
    }
    const agent = ok(await api.POST('/v2/chat/agents', { body: { fullName: value('agent-name'), description: 'Made in the playground', role: value('agent-role'), tools } }));
    await refreshAgents();
    selectAgent(agent);
  } catch (error) {
    show(keyStatus, `Could not create the agent: ${describeError(error)}`);
  }
}

async function openSession(): Promise<void> {
  if (!selectedAgent) return;
  try {
    session = ok(await (client as ApiClient).POST('/v1/chat/chat/sessions', { body: { agentId: selectedAgent.id, platform: 'WEB' } }));
    shownMessages = 0;
    transcript.replaceChildren();
    show(analysisView, 'None yet.');
    show(sessionStatus, `Session ${session.id} is ${session.state}.`);
    buttons.send.disabled = false;
    buttons.close.disabled = false;
  } catch (error) {
    show(sessionStatus, `Could not open a session: ${describeError(error)}`);
  }
}

/** Sends the message and shows the reply as it streams; then the turn's tool calls and timings. */
async function send(event: SubmitEvent): Promise<void> {
  event.preventDefault();
  if (!session) return;
  const input = element<HTMLTextAreaElement>('message');
  const content = input.value;
  input.value = '';
  buttons.send.disabled = true;
  listItem(transcript, content, 'user');
  const reply = listItem(transcript, '', 'assistant streaming');
  const sentAt = performance.now();
  try {
    let deltas = 0;
    for await (const delta of (client as ApiClient).replyDeltas(session.id, { content })) {
      if (!reply.textContent) reply.dataset.firstTokenMs = String(Math.round(performance.now() - sentAt));
      reply.textContent += delta;
      reply.dataset.deltas = String(++deltas);
    }
    reply.classList.remove('streaming');
    await showTurnDetails(reply);
  } catch (error) {
    reply.textContent = `The reply failed: ${describeError(error)}`;
  } finally {
    buttons.send.disabled = session?.state !== 'OPEN';
  }
}

/** The messages this turn stored: tool calls go before the reply, its timings after it. */
async function showTurnDetails(reply: HTMLLIElement): Promise<void> {
  const api = client as ApiClient;
  const id = (session as Session).id;
  session = ok(await api.GET('/api/v1/chat/sessions/{id}', { params: { path: { id } } }));
  const limit = 100;
  const page = Math.floor(shownMessages / limit) + 1;
  const messages = ok(await api.GET('/api/v1/chat/sessions/{id}/messages', { params: { path: { id }, query: { page: String(page), limit: String(limit) } } }));
  const fresh = messages.data.slice(shownMessages - (page - 1) * limit);
  shownMessages = session.messageCount;
  for (const message of fresh) {
    if (message.toolCall) reply.before(toolCallItem(message));
    if (message.role === 'ASSISTANT' && message.metadata.timings) {
      const { modelFirstTokenMs, totalMs, platformMs } = message.metadata.timings;
      const details = document.createElement('p');
      details.className = 'timings';
      details.textContent = `metadata.timings: first token ${modelFirstTokenMs} ms from the model, ${platformMs} ms platform, ${totalMs} ms in all`;
      reply.append(details);
    }
  }
  show(sessionStatus, `Session ${session.id} is ${session.state}.`);
}

function toolCallItem(message: Message): HTMLLIElement {
  const call = message.toolCall as NonNullable<Message['toolCall']>;
  const item = document.createElement('li');
  item.className = 'tool-call';
  item.textContent = `Tool call ${call.name}(${JSON.stringify(call.arguments)}) → ${call.status} in ${Math.round(call.durationMs)} ms: ${call.result.slice(0, 300)}`;
  return item;
}

/** Closes the session, then waits for its analysis (made asynchronously) for up to a minute. */
async function closeSession(): Promise<void> {
  if (!session) return;
  const api = client as ApiClient;
  const id = session.id;
  session = ok(await api.PATCH('/v1/chat/chat/sessions/{id}/close', { params: { path: { id } } }));
  show(sessionStatus, `Session ${id} is ${session.state}.`);
  buttons.send.disabled = true;
  buttons.close.disabled = true;
  for (let attempt = 0; attempt < 30 && !session.analysis; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    session = ok(await api.GET('/api/v1/chat/sessions/{id}', { params: { path: { id } } }));
  }
  show(analysisView, session.analysis ? JSON.stringify(session.analysis, null, 2) : 'No analysis yet; it appears on the session once made.');
}

/** The organization's events, live; the client resumes with Last-Event-ID when the connection drops. */
function followEvents(): void {
  eventsAbort?.abort();
  eventsAbort = new AbortController();
  const signal = eventsAbort.signal;
  void (async () => {
    try {
      for await (const event of (client as ApiClient).events({}, signal)) {
        const sessionId = 'data' in event.data && typeof event.data.data === 'object' && 'sessionId' in event.data.data ? event.data.data.sessionId : event.data.id;
        listItem(eventList, `${event.type} · ${sessionId}`, 'event').dataset.type = event.type;
        // The newest event stays in view.
        eventList.scrollTop = eventList.scrollHeight;
      }
    } catch (error) {
      if (!signal.aborted) listItem(eventList, `The event stream stopped: ${describeError(error)}`, 'event error');
    }
  })();
}

element<HTMLFormElement>('key-form').addEventListener('submit', (event) => {
  event.preventDefault();
  void useKey(keyInput.value.trim());
});
element<HTMLFormElement>('agent-form').addEventListener('submit', (event) => void createAgent(event));
element<HTMLFormElement>('message-form').addEventListener('submit', (event) => void send(event));
buttons.open.addEventListener('click', () => void openSession());
buttons.close.addEventListener('click', () => void closeSession());

const remembered = sessionStorage.getItem(storedKeyName);
if (remembered) {
  keyInput.value = remembered;
  void useKey(remembered);
}
