import { ApiError, createApiClient, type Agent, type ApiClient, type Message, type Schemas, type Session, type VoiceSession } from '../../../clients/typescript/index.ts';
import { phoneChannelPath, type PhoneEvent, type PhoneMessage } from '../../../infra/local/phone-channel.ts';
import { storedKeyName } from './stored-key.ts';

/**
 * The playground: a key, agents with tools and their versions (publish, roll back, replay past sessions through one),
 * a chat whose reply streams token by token, a voice session with the microphone, the organization's events live,
 * the session's analysis once it exists, and test calls to the organization's numbers. Plain DOM, the typed client
 * for every call.
 */

/** The caller of the playground's test calls (the simulator's test range; `npm run call` calls from +15550142). */
const callerNumber = '+15550143';

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
  <section aria-labelledby="versions-heading">
    <h2 id="versions-heading">Versions</h2>
    <p id="publish-mode" role="status">Select an agent to see its versions.</p>
    <button id="switch-mode" type="button" disabled>Switch the publish mode</button>
    <ul id="versions"></ul>
    <button id="publish-draft" type="button" disabled>Publish the draft</button>
    <p id="versions-error" role="alert"></p>
    <section aria-labelledby="version-heading">
      <h3 id="version-heading">Picked version</h3>
      <p id="version-status" role="status">No version picked.</p>
      <button id="publish-version" type="button" disabled>Publish this version</button>
      <button id="rollback-version" type="button" disabled>Roll back to this version</button>
      <table id="version-diff" hidden>
        <caption id="version-diff-caption"></caption>
        <thead><tr><th scope="col">Field</th><th scope="col">Published</th><th scope="col">This version</th></tr></thead>
        <tbody></tbody>
      </table>
      <details><summary>Configuration</summary><pre id="version-configuration">None picked.</pre></details>
    </section>
  </section>
  <section id="replay-section" aria-labelledby="replay-heading">
    <h2 id="replay-heading">Replay</h2>
    <p>Runs past sessions' user turns again through a version of the selected agent (the picked one, else the draft) and shows each turn's original and replayed reply side by side. Tools are answered from what the sessions recorded; the sessions are not changed.</p>
    <form id="replay-form">
      <fieldset><legend>Sessions</legend>
        <label class="choice"><input id="replay-mode-last" name="replay-mode" type="radio" checked> The last closed sessions</label>
        <label for="replay-last">How many</label><input id="replay-last" type="number" min="1" value="5" required>
        <label class="choice"><input id="replay-mode-chosen" name="replay-mode" type="radio"> The sessions checked below (the 20 newest closed ones)</label>
        <ul id="replay-sessions"></ul>
      </fieldset>
      <label class="choice"><input id="replay-live-tools" type="checkbox"> Live tools: a call with no recording runs for real when its tool is a GET API tool</label>
      <button id="replay-start" type="submit" disabled>Replay</button>
    </form>
    <p id="replay-status" role="status">Select an agent to replay its sessions.</p>
    <progress id="replay-progress" aria-label="Sessions replayed" max="1" value="0" hidden></progress>
    <p id="replay-error" role="alert"></p>
    <details id="replay-history-details"><summary>Earlier replays</summary><ol id="replay-history"></ol></details>
    <nav id="replay-changed" aria-label="Changed turns" hidden></nav>
    <div id="replay-results"></div>
  </section>
  <section aria-labelledby="chat-heading">
    <h2 id="chat-heading">Chat</h2>
    <p id="session-status" role="status">No session.</p>
    <button id="open-session" type="button" disabled>Open a session with the selected agent</button>
    <ol id="transcript" aria-live="polite"></ol>
    <form id="message-form">
      <label for="message">Message</label>
      <textarea id="message" rows="2" required placeholder="What is the weather in Paris?"></textarea>
      <button id="send" type="submit" disabled>Send</button>
    </form>
    <button id="close-session" type="button" disabled>Close the session</button>
    <section aria-labelledby="talk-heading">
      <h3 id="talk-heading">Talk</h3>
      <p>A voice session with the selected agent (it must be voice-enabled): your microphone, its voice.</p>
      <button id="talk" type="button" disabled>Talk</button>
      <button id="stop-talking" type="button" disabled>Stop talking</button>
      <p id="talk-status" role="status">Not talking.</p>
      <ol id="voice-transcript" aria-live="polite"></ol>
    </section>
    <section aria-labelledby="analysis-heading"><h3 id="analysis-heading">Analysis</h3><pre id="analysis">None yet.</pre></section>
  </section>
  <section aria-labelledby="phone-heading">
    <h2 id="phone-heading">Phone numbers</h2>
    <p>A test call rings the number through the local Twilio simulator (<code>npm start</code>): you call from ${callerNumber}, the number's agent answers, and what you type is what you say.</p>
    <ul id="numbers"></ul>
    <p id="call-status" role="status">No call.</p>
    <ol id="call-transcript" aria-live="polite"></ol>
    <form id="call-form">
      <label for="call-line">You say</label>
      <input id="call-line" autocomplete="off" required>
      <button id="call-say" type="submit" disabled>Say</button>
    </form>
    <button id="hang-up" type="button" disabled>Hang up</button>
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
const numberList = element<HTMLUListElement>('numbers');
const callStatus = element('call-status');
const callTranscript = element<HTMLOListElement>('call-transcript');
const buttons = {
  open: element<HTMLButtonElement>('open-session'),
  send: element<HTMLButtonElement>('send'),
  close: element<HTMLButtonElement>('close-session'),
  say: element<HTMLButtonElement>('call-say'),
  hangUp: element<HTMLButtonElement>('hang-up'),
  talk: element<HTMLButtonElement>('talk'),
  stopTalking: element<HTMLButtonElement>('stop-talking'),
};
const versionsView = {
  publishMode: element('publish-mode'),
  switchMode: element<HTMLButtonElement>('switch-mode'),
  list: element<HTMLUListElement>('versions'),
  publishDraft: element<HTMLButtonElement>('publish-draft'),
  error: element('versions-error'),
  status: element('version-status'),
  publish: element<HTMLButtonElement>('publish-version'),
  rollback: element<HTMLButtonElement>('rollback-version'),
  diff: element<HTMLTableElement>('version-diff'),
  diffCaption: element('version-diff-caption'),
  configuration: element('version-configuration'),
};
const replayView = {
  lastClosed: element<HTMLInputElement>('replay-last'),
  chosenMode: element<HTMLInputElement>('replay-mode-chosen'),
  sessions: element<HTMLUListElement>('replay-sessions'),
  liveTools: element<HTMLInputElement>('replay-live-tools'),
  start: element<HTMLButtonElement>('replay-start'),
  status: element('replay-status'),
  progress: element<HTMLProgressElement>('replay-progress'),
  error: element('replay-error'),
  changed: element('replay-changed'),
  results: element('replay-results'),
  history: element<HTMLOListElement>('replay-history'),
};
const talkStatus = element('talk-status');
const voiceTranscript = element<HTMLOListElement>('voice-transcript');

let client: ApiClient | undefined;
let selectedAgent: Agent | undefined;
let pickedVersion: number | undefined;
/** The replay whose progress the page shows; starting another or selecting another agent stops following it. */
let followedReplay: string | undefined;
let session: Session | undefined;
let shownMessages = 0;
let eventsAbort: AbortController | undefined;
let phone: WebSocket | undefined;

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
    await refreshNumbers();
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
  pickedVersion = undefined;
  buttons.open.disabled = false;
  buttons.talk.disabled = talking !== undefined;
  for (const button of agentList.querySelectorAll('button')) button.setAttribute('aria-pressed', String(button.textContent?.startsWith(`${agent.fullName} (`)));
  show(versionsView.status, 'No version picked.');
  show(versionsView.configuration, 'None picked.');
  versionsView.diff.hidden = true;
  versionsView.publish.disabled = true;
  versionsView.rollback.disabled = true;
  followedReplay = undefined;
  show(replayView.status, `No replay of ${agent.fullName} yet.`);
  show(replayView.error, '');
  replayView.progress.hidden = true;
  replayView.changed.hidden = true;
  replayView.results.replaceChildren();
  showReplayCandidate();
  void inVersions(loadVersions);
  void inReplays(loadReplayableSessions);
  void inReplays(loadReplayHistory);
}

type VersionSummary = Schemas['ListAgentVersionsResponse']['data'][number];

function describeAuthor(author: VersionSummary['author']): string {
  return author.type === 'API_KEY' ? `key ${author.keyId}` : `JWT ${author.subject ?? '(no subject)'}`;
}

/** Runs an action of a section, showing its error in the section's alert rather than losing it. */
async function reportingIn(alert: HTMLElement, action: () => Promise<void>): Promise<void> {
  try {
    await action();
    show(alert, '');
  } catch (error) {
    show(alert, describeError(error));
  }
}

const inVersions = (action: () => Promise<void>) => reportingIn(versionsView.error, action);
const inReplays = (action: () => Promise<void>) => reportingIn(replayView.error, action);

/** Reloads the selected agent and its versions (the 100 newest), then the picked version, if any. */
async function loadVersions(): Promise<void> {
  const agentId = (selectedAgent as Agent).id;
  const api = client as ApiClient;
  const [agent, page] = await Promise.all([
    api.GET('/v2/chat/agents/{id}', { params: { path: { id: agentId } } }).then(ok),
    api.GET('/v2/chat/agents/{id}/versions', { params: { path: { id: agentId }, query: { limit: '100' } } }).then(ok),
  ]);
  // Another agent was selected meanwhile: its own refresh shows it.
  if (selectedAgent?.id !== agentId) return;
  selectedAgent = agent;
  const otherMode = agent.publishMode === 'AUTO' ? 'MANUAL' : 'AUTO';
  show(
    versionsView.publishMode,
    `${agent.fullName}: publish mode ${agent.publishMode} (${agent.publishMode === 'AUTO' ? 'every change is published at once' : 'changes stay a draft until published'}); draft ${agent.draftVersion ?? 'none'}, published ${agent.publishedVersion ?? 'none'}.`,
  );
  versionsView.switchMode.textContent = `Switch to ${otherMode}`;
  versionsView.switchMode.disabled = false;
  versionsView.publishDraft.disabled = agent.draftVersion === undefined || agent.draftVersion === agent.publishedVersion;
  showReplayCandidate();
  versionsView.list.replaceChildren(...page.data.map(versionItem));
  if (page.pagination.total > page.data.length) listItem(versionsView.list, `${page.pagination.total - page.data.length} older versions are not shown.`);
  if (pickedVersion !== undefined) await showVersion(pickedVersion);
}

function versionItem(version: VersionSummary): HTMLLIElement {
  const item = document.createElement('li');
  const button = document.createElement('button');
  button.type = 'button';
  button.textContent = `Version ${version.number}`;
  button.setAttribute('aria-pressed', String(version.number === pickedVersion));
  button.addEventListener('click', () => {
    // Until the version is shown, the buttons would still act on the one picked before.
    versionsView.publish.disabled = true;
    versionsView.rollback.disabled = true;
    void inVersions(() => showVersion(version.number));
  });
  const marks = [version.published && 'published', version.draft && 'draft'].filter(Boolean).join(', ');
  item.dataset.number = String(version.number);
  item.append(button, `${marks ? ` (${marks})` : ''} by ${describeAuthor(version.author)}, ${new Date(version.createdAt).toLocaleString()}`);
  return item;
}

/** Shows a version: its configuration, and what it changes from the published version. */
async function showVersion(number: number): Promise<void> {
  const agentId = (selectedAgent as Agent).id;
  const api = client as ApiClient;
  const published = (selectedAgent as Agent).publishedVersion;
  const [version, diff] = await Promise.all([
    api.GET('/v2/chat/agents/{id}/versions/{number}', { params: { path: { id: agentId, number } } }).then(ok),
    published === undefined || published === number
      ? undefined
      : api.GET('/v2/chat/agents/{id}/versions/{number}/diff', { params: { path: { id: agentId, number }, query: { against: published } } }).then(ok),
  ]);
  if (selectedAgent?.id !== agentId) return;
  pickedVersion = number;
  showReplayCandidate();
  for (const button of versionsView.list.querySelectorAll('button')) button.setAttribute('aria-pressed', String(button.textContent === `Version ${number}`));
  show(versionsView.status, `Version ${number}${version.published ? ', published' : ''}${version.draft ? ', the draft' : ''}: by ${describeAuthor(version.author)}, ${new Date(version.createdAt).toLocaleString()}.`);
  show(versionsView.configuration, JSON.stringify({ configuration: version.configuration, tools: version.tools }, null, 2));
  versionsView.publish.disabled = version.published;
  versionsView.rollback.disabled = false;
  versionsView.diff.hidden = false;
  const rows = versionsView.diff.tBodies[0] as HTMLTableSectionElement;
  if (!diff) {
    show(versionsView.diffCaption, 'This is the published version.');
    rows.replaceChildren();
    return;
  }
  show(versionsView.diffCaption, diff.changes.length === 0 ? `Same configuration as the published version ${diff.from}.` : `Changes from the published version ${diff.from} to version ${diff.to}`);
  rows.replaceChildren(
    ...diff.changes.map((change) => {
      const row = document.createElement('tr');
      const cell = (value: unknown, absent: boolean) => {
        const td = document.createElement('td');
        td.textContent = absent ? '(none)' : typeof value === 'string' ? value : JSON.stringify(value, null, 2);
        return td;
      };
      const path = document.createElement('th');
      path.scope = 'row';
      path.textContent = change.path;
      row.append(path, cell(change.before, !('before' in change)), cell(change.after, !('after' in change)));
      return row;
    }),
  );
}

/** Publishes a version (the draft when none is given), rolls back to one, or switches the publish mode; then reloads. */
function changeVersions(change: (api: ApiClient, agentId: string) => Promise<unknown>): Promise<void> {
  return inVersions(async () => {
    await change(client as ApiClient, (selectedAgent as Agent).id);
    await loadVersions();
  });
}

function publish(version?: number): Promise<void> {
  return changeVersions(async (api, id) => ok(await api.POST('/v2/chat/agents/{id}/publish', { params: { path: { id } }, body: version === undefined ? {} : { version } })));
}

function rollBack(version: number): Promise<void> {
  // The rollback makes a new version (published, the draft): show that one.
  return changeVersions(async (api, id) => {
    const agent = ok(await api.POST('/v2/chat/agents/{id}/rollback', { params: { path: { id } }, body: { version } }));
    pickedVersion = agent.draftVersion;
  });
}

function switchPublishMode(): Promise<void> {
  const publishMode = (selectedAgent as Agent).publishMode === 'AUTO' ? 'MANUAL' : 'AUTO';
  return changeVersions(async (api, id) => ok(await api.PATCH('/v2/chat/agents/{id}', { params: { path: { id } }, body: { publishMode } })));
}

type Replay = Schemas['StartReplayResponse'];
type SessionReplay = NonNullable<Replay['results']>[number];
type ReplayedTurn = SessionReplay['turns'][number];

/** How often the page asks how a replay is going. */
const replayPollMs = 1_000;

/** A replay runs through the picked version, or the draft when none is picked. */
function replayVersion(): number | undefined {
  return pickedVersion ?? selectedAgent?.draftVersion;
}

function showReplayCandidate(): void {
  const version = replayVersion();
  replayView.start.disabled = version === undefined;
  replayView.start.textContent =
    version === undefined ? 'Replay (the agent has no version yet)' : `Replay through version ${version}${version === selectedAgent?.draftVersion ? ' (the draft)' : ''}`;
}

/** The agent's 20 newest closed sessions, to check the ones to replay (a replay takes 20 by default). */
async function loadReplayableSessions(): Promise<void> {
  const agentId = (selectedAgent as Agent).id;
  const page = ok(await (client as ApiClient).GET('/v1/chat/chat/sessions', { params: { query: { agentId, state: 'CLOSED', limit: '20' } } }));
  if (selectedAgent?.id !== agentId) return;
  replayView.sessions.replaceChildren();
  if (page.data.length === 0) listItem(replayView.sessions, 'No closed session yet.');
  for (const closed of page.data) {
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.value = closed.id;
    const label = document.createElement('label');
    label.className = 'choice';
    label.append(box, ` ${new Date(closed.createdAt).toLocaleString()}, ${closed.messageCount} messages (${closed.id})`);
    const item = document.createElement('li');
    item.append(label);
    replayView.sessions.append(item);
  }
}

async function startReplay(event: SubmitEvent): Promise<void> {
  event.preventDefault();
  const agentId = (selectedAgent as Agent).id;
  const version = replayVersion() as number;
  const sessions = replayView.chosenMode.checked
    ? { sessionIds: [...replayView.sessions.querySelectorAll<HTMLInputElement>('input:checked')].map((box) => box.value) }
    : { lastClosed: replayView.lastClosed.valueAsNumber };
  followedReplay = undefined;
  await inReplays(async () => {
    // Disabled while the request is on its way, so that a double click starts one replay.
    replayView.start.disabled = true;
    const answer = await (client as ApiClient)
      .POST('/v2/chat/agents/{id}/replays', { params: { path: { id: agentId } }, body: { ...sessions, candidate: { version }, liveTools: replayView.liveTools.checked } })
      .finally(showReplayCandidate);
    const started = ok(answer);
    void inReplays(loadReplayHistory);
    await followReplay(started);
    await loadReplayHistory();
  });
}

/** Shows the replay, then asks for it again until it has finished, unless the page has moved on to another. */
async function followReplay(started: Replay): Promise<void> {
  let replay = started;
  followedReplay = replay.id;
  showReplay(replay);
  while (replay.status === 'QUEUED' || replay.status === 'RUNNING') {
    await new Promise((resolve) => setTimeout(resolve, replayPollMs));
    if (followedReplay !== started.id) return;
    replay = ok(await (client as ApiClient).GET('/v2/chat/agents/{id}/replays/{replayId}', { params: { path: { id: started.agentId, replayId: started.id } } }));
    if (followedReplay !== started.id) return;
    showReplay(replay);
  }
}

function showReplay(replay: Replay): void {
  const { sessionsDone, sessionsTotal, turnsTotal } = replay.progress;
  const results = replay.results ?? [];
  const changed = results.flatMap((result, index) => result.turns.filter((turn) => turn.diff === 'CHANGED').map((turn) => ({ index, turn })));
  const turnsShown = results.reduce((sum, result) => sum + result.turns.length, 0);
  const outcome = replay.status === 'COMPLETED' ? ` ${changed.length} of ${turnsShown} turns changed.` : replay.error ? ` ${replay.error}` : '';
  show(
    replayView.status,
    `Replay ${replay.id} through ${candidateText(replay.candidate)}${replay.liveTools ? ' with live tools' : ''}: ${replay.status}, ${sessionsDone} of ${sessionsTotal} sessions replayed (${turnsTotal} user turns).${outcome}`,
  );
  replayView.progress.hidden = false;
  replayView.progress.max = Math.max(sessionsTotal, 1);
  replayView.progress.value = sessionsDone;
  replayView.changed.hidden = results.length === 0;
  const links = changed.map(({ index, turn }) => {
    const link = document.createElement('a');
    link.href = `#${turnAnchor(index, turn)}`;
    link.textContent = `Session ${index + 1}, turn ${turn.turn}`;
    const item = document.createElement('li');
    item.append(link);
    return item;
  });
  const list = document.createElement('ul');
  list.append(...links);
  const heading = document.createElement('p');
  heading.textContent = changed.length === 0 ? 'No turn changed.' : `Changed turns (${changed.length}):`;
  replayView.changed.replaceChildren(heading, list);
  replayView.results.replaceChildren(...results.map(sessionReplayView));
}

/** A replay's candidate in words: a version, or the changes an API caller gave inline. */
const candidateText = (candidate: Replay['candidate']) => (candidate.version === undefined ? 'inline changes' : `version ${candidate.version}`);

const turnAnchor = (index: number, turn: ReplayedTurn) => `replay-session-${index + 1}-turn-${turn.turn}`;

/** One replayed session: per turn, the user's message, the original and the replayed side, CHANGED turns marked. */
function sessionReplayView(result: SessionReplay, index: number): HTMLElement {
  const section = document.createElement('section');
  section.className = 'replay-session';
  const heading = document.createElement('h3');
  heading.textContent =
    result.status === 'FAILED'
      ? `Session ${index + 1} (${result.sessionId}) failed: ${result.error ?? 'no reason given'}`
      : `Session ${index + 1} (${result.sessionId}): ${result.turnsChanged} of ${result.turns.length} turns changed`;
  const table = document.createElement('table');
  table.className = 'replay-turns';
  const header = table.createTHead().insertRow();
  for (const title of ['Turn', 'User', 'Original', 'Replay']) {
    const cell = document.createElement('th');
    cell.scope = 'col';
    cell.textContent = title;
    header.append(cell);
  }
  const rows = table.createTBody();
  for (const turn of result.turns) {
    const row = rows.insertRow();
    row.id = turnAnchor(index, turn);
    row.dataset.diff = turn.diff;
    const number = document.createElement('th');
    number.scope = 'row';
    number.textContent = `${turn.turn} ${turn.diff}`;
    const user = document.createElement('td');
    user.textContent = turn.user;
    row.append(number, user, turnSideCell(turn.original), turnSideCell(turn.replay));
  }
  section.append(heading, ...(result.analysis ? [analysisLine(result.analysis)] : []), table);
  return section;
}

/** The session's stored analysis against the replay's: the verdicts that differ, each from its original value to the replayed one. */
function analysisLine(analysis: NonNullable<SessionReplay['analysis']>): HTMLParagraphElement {
  const line = document.createElement('p');
  line.className = 'replay-analysis';
  const verdict = (value: unknown) => (value === null ? 'none' : String(value));
  const changes = analysis.changes.map((change) => `${change.field} ${verdict(change.original)} → ${verdict(change.replay)}`);
  line.textContent =
    analysis.original === null
      ? `Analysis: the session has none stored; the replay's is ${analysis.replay.status}.`
      : changes.length === 0
        ? 'Analysis: no verdict changed.'
        : `Analysis changed: ${changes.join('; ')}.`;
  return line;
}

/** The agent's 10 latest replays, newest first: each shown again with a click. */
async function loadReplayHistory(): Promise<void> {
  const agentId = (selectedAgent as Agent).id;
  const page = ok(await (client as ApiClient).GET('/v2/chat/agents/{id}/replays', { params: { path: { id: agentId }, query: { limit: '10' } } }));
  if (selectedAgent?.id !== agentId) return;
  replayView.history.replaceChildren();
  if (page.data.length === 0) listItem(replayView.history, 'No replay yet.');
  for (const earlier of page.data) {
    const button = document.createElement('button');
    button.type = 'button';
    button.textContent = `${new Date(earlier.createdAt).toLocaleString()}, through ${candidateText(earlier.candidate)}: ${earlier.status}, ${earlier.turnsChanged} turns changed`;
    button.addEventListener('click', () => void inReplays(async () => followReplay(ok(await (client as ApiClient).GET('/v2/chat/agents/{id}/replays/{replayId}', { params: { path: { id: agentId, replayId: earlier.id } } })))));
    const item = document.createElement('li');
    item.append(button);
    replayView.history.append(item);
  }
}

/** A side of a turn: its tool calls, then its reply. */
function turnSideCell(side: ReplayedTurn['original']): HTMLTableCellElement {
  const cell = document.createElement('td');
  for (const call of side.toolCalls) {
    const line = document.createElement('p');
    line.className = 'tool-call';
    line.textContent = `Tool call ${toolCallText(call)}: ${call.result.slice(0, 300)}`;
    cell.append(line);
  }
  const reply = document.createElement('p');
  reply.className = 'reply';
  reply.textContent = side.reply;
  cell.append(reply);
  return cell;
}

async function createAgent(event: SubmitEvent): Promise<void> {
  event.preventDefault();
  const api = client as ApiClient;
  const value = (id: string) => element<HTMLInputElement>(id).value.trim();
  try {
    const tools: { toolId: string }[] = [];
    if (value('tool-name')) {
      // The URL's placeholders are the tool's parameters: the built-in model fills them from a plain request.
      const parameters = [...new Set([...value('tool-url').matchAll(/\{\{(\w+)\}\}/g)].map((match) => match[1] as string))];
      const tool = ok(
        await api.POST('/v1/chat/tools', {
          body: {
            name: value('tool-name'),
            description: `Calls ${value('tool-url')}`,
            type: 'API_TOOL',
            apiTool: { url: value('tool-url'), method: 'GET' },
            ajvPropertiesSchema: { type: 'object', properties: Object.fromEntries(parameters.map((name) => [name, { type: 'string' }])), required: parameters, additionalProperties: true },
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
  item.textContent = `Tool call ${toolCallText(call)} in ${Math.round(call.durationMs)} ms: ${call.result.slice(0, 300)}`;
  return item;
}

const toolCallText = (call: { name: string; arguments: unknown; status: string }) => `${call.name}(${JSON.stringify(call.arguments)}) → ${call.status}`;

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

async function refreshNumbers(): Promise<void> {
  numberList.replaceChildren();
  try {
    const { items } = ok(await (client as ApiClient).GET('/api/v1/phone-numbers', {}));
    if (items.length === 0) listItem(numberList, 'None yet: buy one with POST /api/v1/phone-numbers/buy.');
    for (const number of items) {
      const item = document.createElement('li');
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'dial';
      button.textContent = `Call ${number.phone_number}`;
      button.disabled = phone !== undefined;
      button.addEventListener('click', () => testCall(number.phone_number));
      item.append(button, ` ${number.label ?? ''}${number.agentId ? '' : ' (no agent answers it)'}`);
      numberList.append(item);
    }
  } catch (error) {
    listItem(numberList, `Could not list the numbers: ${describeError(error)}`);
  }
}

function showCallOn(on: boolean): void {
  for (const button of numberList.querySelectorAll<HTMLButtonElement>('button.dial')) button.disabled = on;
  buttons.hangUp.disabled = !on;
  if (!on) buttons.say.disabled = true;
}

/**
 * A test call: this page is the caller's phone at the local Twilio simulator (through this origin), which dials the
 * number as any caller would; the agent's reply shows as its tokens arrive.
 */
function testCall(number: string): void {
  callTranscript.replaceChildren();
  show(callStatus, `Calling ${number} from ${callerNumber}…`);
  const channel = new WebSocket(`${location.origin.replace(/^http/, 'ws')}${phoneChannelPath}?number=${encodeURIComponent(callerNumber)}`);
  const send = (message: PhoneMessage) => channel.send(JSON.stringify(message));
  phone = channel;
  showCallOn(true);
  let reply: HTMLLIElement | undefined;
  let ended = false;
  channel.addEventListener('message', (event) => {
    const message = JSON.parse(String(event.data)) as PhoneEvent;
    if (message.type === 'ready') send({ type: 'dial', to: number });
    else if (message.type === 'dialled') show(callStatus, `Call ${message.callSid} to ${number} is ringing.`);
    else if (message.type === 'connected') {
      show(callStatus, `Connected to ${number}. Say something.`);
      buttons.say.disabled = false;
    } else if (message.type === 'token') {
      reply ??= listItem(callTranscript, '', 'assistant');
      reply.textContent += message.token;
      if (message.last) reply = undefined;
    } else if (message.type === 'end') {
      ended = true;
      show(callStatus, `The call ended (${message.reason}).`);
      channel.close();
    }
  });
  channel.addEventListener('close', () => {
    if (!ended) show(callStatus, 'No test call: they need the local Twilio simulator (npm start). On AWS, call the number from a phone.');
    phone = undefined;
    showCallOn(false);
  });
}

function sayOnCall(event: SubmitEvent): void {
  event.preventDefault();
  const input = element<HTMLInputElement>('call-line');
  listItem(callTranscript, input.value, 'user');
  phone?.send(JSON.stringify({ type: 'say', text: input.value } satisfies PhoneMessage));
  input.value = '';
}

/** The organization's events, live; the client resumes with Last-Event-ID when the connection drops. */
let talking: { session: VoiceSession; stop(): void } | undefined;

/**
 * Talk: a voice session with the selected agent. The microphone (getUserMedia) feeds an AudioWorklet at 16 kHz that
 * posts 20 ms PCM frames, sent as they come; the agent's PCM is played back to back, and each piece's mark is
 * acknowledged when its audio has played, so that a barge-in keeps in the transcript what was heard. Both sides'
 * transcripts show live: the line of the turn under way is rewritten until it is final.
 */
async function talk(): Promise<void> {
  if (!selectedAgent || talking) return;
  buttons.talk.disabled = true;
  voiceTranscript.replaceChildren();
  const context = new AudioContext({ sampleRate: 16_000 });
  let microphone: MediaStream | undefined;
  const sources = new Set<AudioBufferSourceNode>();
  const timers = new Set<ReturnType<typeof setTimeout>>();
  let playUntil = 0;
  const live: Record<'user' | 'agent', HTMLLIElement | undefined> = { user: undefined, agent: undefined };
  try {
    await context.audioWorklet.addModule('/assets/microphone-worklet.js');
    const session = await (client as ApiClient).voiceSession(
      { agentId: selectedAgent.id },
      {
        autoPlayed: false,
        onAudio: (samples) => {
          const buffer = context.createBuffer(1, samples.length, 16_000);
          buffer.getChannelData(0).set(Float32Array.from(samples, (sample) => sample / 32_768));
          const source = context.createBufferSource();
          source.buffer = buffer;
          source.connect(context.destination);
          playUntil = Math.max(playUntil, context.currentTime);
          source.start(playUntil);
          playUntil += buffer.duration;
          sources.add(source);
          source.addEventListener('ended', () => sources.delete(source));
        },
        onEvent: (event) => {
          if (event.type === 'user.transcript' || event.type === 'agent.transcript') {
            const speaker = event.type === 'user.transcript' ? 'user' : 'agent';
            live[speaker] ??= listItem(voiceTranscript, '', speaker === 'user' ? 'user' : 'assistant');
            live[speaker].textContent = event.text;
            live[speaker].dataset.final = String(event.final);
            if (event.final) live[speaker] = undefined;
          } else if (event.type === 'agent.audio.end') {
            const timer = setTimeout(() => {
              timers.delete(timer);
              talking?.session.played(event.mark);
            }, Math.max(0, playUntil - context.currentTime) * 1000);
            timers.add(timer);
          } else if (event.type === 'clear') {
            for (const source of sources) source.stop();
            sources.clear();
            playUntil = 0;
          } else if (event.type === 'session.ended') {
            show(talkStatus, `The voice session ended (${event.reason}).`);
          }
        },
      },
    );
    // The microphone opens once the session is admitted: nothing said before it would be heard.
    microphone = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1, echoCancellation: true, noiseSuppression: false, autoGainControl: false } });
    const frames = new AudioWorkletNode(context, 'microphone-frames');
    context.createMediaStreamSource(microphone).connect(frames);
    frames.port.onmessage = (message: MessageEvent<Int16Array>) => session.sendAudio(message.data);
    const stop = () => {
      for (const timer of timers) clearTimeout(timer);
      for (const track of microphone?.getTracks() ?? []) track.stop();
      void context.close();
    };
    talking = { session, stop };
    show(talkStatus, `Talking with ${selectedAgent.fullName} (session ${session.sessionId}).`);
    buttons.stopTalking.disabled = false;
    void session.ended.then(() => {
      stop();
      talking = undefined;
      buttons.stopTalking.disabled = true;
      buttons.talk.disabled = !selectedAgent;
    });
  } catch (error) {
    for (const track of microphone?.getTracks() ?? []) track.stop();
    void context.close();
    show(talkStatus, `Could not talk: ${describeError(error)}`);
    buttons.talk.disabled = false;
  }
}

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
element<HTMLFormElement>('call-form').addEventListener('submit', sayOnCall);
buttons.hangUp.addEventListener('click', () => phone?.send(JSON.stringify({ type: 'hangup' } satisfies PhoneMessage)));
buttons.open.addEventListener('click', () => void openSession());
versionsView.switchMode.addEventListener('click', () => void switchPublishMode());
versionsView.publishDraft.addEventListener('click', () => void publish());
versionsView.publish.addEventListener('click', () => void publish(pickedVersion));
versionsView.rollback.addEventListener('click', () => void rollBack(pickedVersion as number));
element<HTMLFormElement>('replay-form').addEventListener('submit', (event) => void startReplay(event));
replayView.chosenMode.addEventListener('change', () => void inReplays(loadReplayableSessions));
replayView.sessions.addEventListener('change', () => {
  replayView.chosenMode.checked = true;
});
buttons.talk.addEventListener('click', () => void talk());
buttons.stopTalking.addEventListener('click', () => talking?.session.hangUp());
buttons.close.addEventListener('click', () => void closeSession());

const remembered = sessionStorage.getItem(storedKeyName);
if (remembered) {
  keyInput.value = remembered;
  void useKey(remembered);
}
