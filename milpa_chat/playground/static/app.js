// The playground page: draws what the adapters sent to the local Telegram and Slack servers, as the
// platforms would, and sends what a person does (typing, tapping) as the platforms would deliver it.
// No build step, no framework: the DOM is updated incrementally, one element per message.
"use strict";

const $ = (id) => document.getElementById(id);
const view = {
  state: null, persona: null, tgChat: null, skChannel: null,
  tg: new Map(), tgDrafts: new Map(), sk: new Map(), tgRooms: new Map(), skRooms: new Map(), queue: [], typingUntil: new Map(),
  tgText: new Map(), prompts: new Map(), answered: new Set(), dismissed: new Set(), modals: new Map(), modalShown: null,
  threads: new Map(), paneOf: new Map(),
};
// Slack's assistant pane: a thread of the person's DM with the app, drawn in a room of its own ("D…/<thread ts>").
const PANE = "pane";
const paneKey = (ev) => `${ev.channel}/${ev.thread_ts}`;

function element(e, message) {
  if (e.type === "button") {
    const btn = document.createElement(e.url ? "a" : "button");
    btn.className = `sk-btn ${e.style || ""}`;
    btn.textContent = e.text ? e.text.text : "";
    if (e.url) { btn.href = e.url; btn.target = "_blank"; btn.rel = "noopener"; return btn; }
    btn.type = "button";
    btn.addEventListener("click", () => act("/api/slack/click", { channel: message.channel, ts: message.ts, action_id: e.action_id }));
    return btn;
  }
  const span = document.createElement("span");
  span.className = "sk-btn disabled";
  span.textContent = (e.placeholder && e.placeholder.text) || (e.text && e.text.text) || e.type;
  return span;
}

// ------------------------------------------------------------------ people and places
function personName(id) {
  const p = view.state.personas.find((x) => x.slack_id === id || String(x.telegram_id) === String(id));
  if (p) return p.name;
  return id === view.state.slack.bot_user ? "Playground app" : id;
}
const me = () => view.state.personas.find((p) => p.key === view.persona);
const isApprover = (p) => p.role === "approver";

function room(map, key, scroll) {
  let el = map.get(key);
  if (!el) {
    el = document.createElement("div");
    el.className = "room";
    el.dataset.room = key;
    el.hidden = true;
    scroll.append(el);
    map.set(key, el);
  }
  return el;
}

function renderPersonas() {
  const box = $("personas");
  box.replaceChildren();
  for (const p of view.state.personas) {
    const b = document.createElement("button");
    b.type = "button";
    b.dataset.persona = p.key;
    b.setAttribute("role", "radio");
    b.setAttribute("aria-checked", String(p.key === view.persona));
    b.innerHTML = `<strong>${escapeHtml(p.name)}</strong><small>${escapeHtml(p.role)}</small>`;
    b.addEventListener("click", () => switchPersona(p.key));
    box.append(b);
  }
}

function switchPersona(key) {
  view.persona = key;
  const p = me();
  if (view.tgChat !== view.state.telegram.approvers || !isApprover(p)) view.tgChat = p.telegram_id;
  if (view.skChannel === view.state.slack.approvers && !isApprover(p)) view.skChannel = view.state.slack.work;
  if (view.skChannel && view.skChannel.startsWith("D")) view.skChannel = p.slack_dm;
  for (const el of document.querySelectorAll("[data-only]")) el.hidden = el.dataset.only !== p.slack_id;
  renderPersonas();
  renderChatTabs();
  renderModal();
}

function renderChatTabs() {
  const p = me();
  const tg = [[p.telegram_id, "🤖 " + view.state.telegram.bot, true],
    [view.state.telegram.approvers, "👥 " + view.state.telegram.approvers_title, isApprover(p)]];
  tabs($("tg-chats"), tg, view.tgChat, (id) => { view.tgChat = id; renderChatTabs(); });
  const s = view.state.slack;
  const sk = [[s.work, "# " + s.channels[s.work], true], [s.approvers, "# " + s.channels[s.approvers], isApprover(p)],
    [p.slack_dm, "💬 Playground app", true], [PANE, "✨ Assistant", true]];
  tabs($("sk-chats"), sk, view.skChannel, (id) => { view.skChannel = id; renderChatTabs(); });
  const shown = skRoomKey();
  for (const [key, el] of view.tgRooms) el.hidden = String(key) !== String(view.tgChat);
  for (const [key, el] of view.skRooms) el.hidden = key !== shown;
  room(view.tgRooms, String(view.tgChat), $("tg-scroll")).hidden = false;
  if (shown) room(view.skRooms, shown, $("sk-scroll")).hidden = false;
  $("sk-input").placeholder = view.skChannel === PANE ? "Ask the assistant — try “pay ACME 120”"
    : view.skChannel.startsWith("D") ? "Message the app — list_notes" : "/milpa list_notes";
  if (view.skChannel === PANE && !shown) openPane();
  renderReplying();
  showTyping();
  stickToBottom($("tg-scroll"), true);
  stickToBottom($("sk-scroll"), true);
}

function tabs(box, entries, current, pick) {
  box.replaceChildren();
  for (const [id, label, allowed] of entries) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = label;
    b.dataset.chat = id;
    b.disabled = !allowed;
    if (!allowed) b.title = `${me().name} is not a member`;
    b.setAttribute("aria-pressed", String(String(id) === String(current)));
    b.addEventListener("click", () => pick(id));
    box.append(b);
  }
}

// ------------------------------------------------------------------ feed events
function onEvent(ev) {
  if (ev.type === "tg.message") tgMessage(ev);
  else if (ev.type === "tg.draft") tgDraft(ev);
  else if (ev.type === "tg.answer") tgAnswer(ev);
  else if (ev.type === "tg.action") { view.typingUntil.set(String(ev.chat), Date.now() + 5000); showTyping(); }
  else if (ev.type === "slack.message") skMessage(ev);
  else if (ev.type === "slack.command") skCommand(ev);
  else if (ev.type === "slack.view") { view.modals.set(ev.id, ev); renderModal(); }
  else if (ev.type === "slack.thread") skThread(ev);
  else if (ev.type === "tour.step") tourStep(ev);
}

function tgMessage(ev) {
  const key = `${ev.chat}:${ev.id}`;
  const home = room(view.tgRooms, String(ev.chat), $("tg-scroll"));
  let el = view.tg.get(key);
  if (!el) { el = document.createElement("div"); view.tg.set(key, el); home.append(el); }
  if (ev.from.bot) { view.typingUntil.delete(String(ev.chat)); dropDrafts(ev.chat); }
  el.className = `tg-msg ${ev.from.bot ? "in" : "out"}`;
  el.dataset.id = ev.id;
  el.dataset.version = ev.version;
  el.hidden = ev.deleted;
  el.replaceChildren();
  if (ev.chat < 0 && !ev.from.bot) { const who = document.createElement("div"); who.className = "who"; who.textContent = ev.from.name; el.append(who); }
  view.tgText.set(key, ev.text || "");
  if (ev.reply_to) {  // a reply: Telegram shows what it answers
    const quote = document.createElement("div");
    quote.className = "quote";
    quote.textContent = view.tgText.get(`${ev.chat}:${ev.reply_to}`) || "…";
    el.append(quote);
    if (!ev.from.bot) { view.answered.add(`${ev.chat}:${ev.reply_to}:${ev.from.id}`); renderReplying(); }
  }
  if (ev.force_reply) {  // sent with ForceReply: the app of the person it asks opens a reply to it
    el.classList.add("prompt");
    view.prompts.set(key, ev);
    el.onclick = () => { view.dismissed.delete(key); renderReplying(key); };
  }
  const body = document.createElement("div");
  body.className = "body";
  if (ev.html !== null) tgHtml(ev.html, body); else body.textContent = ev.text || "";
  el.append(body);
  if (ev.document) el.append(tgDocument(ev.document));
  const meta = document.createElement("div");
  meta.className = "meta";
  meta.textContent = (ev.version > 1 ? "edited " : "") + new Date(ev.date * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  el.append(meta);
  if (ev.buttons && ev.buttons.length) el.append(keyboard(ev));
  if (ev.force_reply) {
    const asks = document.createElement("div");
    asks.className = "asks";
    asks.textContent = "↩ asks for a reply";
    el.append(asks);
    renderReplying();
  }
  showTyping();
}

// A ForceReply prompt addressed to the current persona (their private chat, or "Name: ..." in a group), not
// answered by them yet: the composer replies to it, as Telegram's app does.
function promptFor(key) {
  const p = me();
  const mine = (ev) => !ev.deleted && (ev.chat === p.telegram_id || (ev.text || "").startsWith(`${p.name}: `))
    && !view.answered.has(`${ev.chat}:${ev.id}:${p.telegram_id}`);
  if (key && view.prompts.has(key) && mine(view.prompts.get(key))) return view.prompts.get(key);
  let found = null;
  for (const [k, ev] of view.prompts) {
    if (String(ev.chat) === String(view.tgChat) && mine(ev) && !view.dismissed.has(k)) found = ev;
  }
  return found;
}

function renderReplying(key) {
  const ev = view.state ? promptFor(key) : null;
  view.replyTo = ev && String(ev.chat) === String(view.tgChat) ? ev : null;
  $("tg-replying").hidden = !view.replyTo;
  $("tg-input").placeholder = view.replyTo ? (view.replyTo.placeholder || "Reply")
    : "Message — try /list_notes, /send_payment ACME 120, /approvals";
  if (view.replyTo) $("tg-replying-text").textContent = view.replyTo.text || "";
}

function tgDocument(doc) {
  const a = document.createElement("a");
  a.className = "doc";
  a.href = `/api/telegram/file/${encodeURIComponent(doc.file_id)}`;
  a.textContent = `📄 ${doc.file_name || "file"} · ${(doc.size / 1024).toFixed(1)} KB`;
  return a;
}

function keyboard(ev) {
  const kb = document.createElement("div");
  kb.className = "keyboard";
  for (const row of ev.buttons) {
    const r = document.createElement("div");
    r.className = "kb-row";
    for (const b of row) {
      const btn = document.createElement(b.url ? "a" : "button");
      btn.className = "kb-btn";
      btn.textContent = b.text;
      if (b.url) { btn.href = b.url; btn.target = "_blank"; btn.rel = "noopener"; }
      else {
        btn.type = "button";
        btn.addEventListener("click", () => act("/api/telegram/tap", { chat: ev.chat, id: ev.id, data: b.callback_data }));
      }
      r.append(btn);
    }
    kb.append(r);
  }
  return kb;
}

// sendMessageDraft: the private chat shows the bot's answer growing in a bubble marked as a draft (empty: the
// "Thinking…" placeholder), at the bottom of the chat, until the bot's next message replaces it.
function tgDraft(ev) {
  const key = `${ev.chat}:${ev.draft}`;
  const home = room(view.tgRooms, String(ev.chat), $("tg-scroll"));
  let el = view.tgDrafts.get(key);
  if (!el) {
    el = document.createElement("div");
    el.className = "tg-msg in draft";
    el.dataset.draft = ev.draft;
    const body = document.createElement("div");
    body.className = "body";
    const meta = document.createElement("div");
    meta.className = "meta";
    meta.textContent = "draft · typing…";
    el.append(body, meta);
    view.tgDrafts.set(key, el);
  }
  el.querySelector(".body").textContent = ev.text || "Thinking…";
  el.classList.toggle("thinking", !ev.text);
  home.append(el);  // stays last: a draft is what the bot is writing now
  stickToBottom($("tg-scroll"));
}

function dropDrafts(chat) {
  for (const [key, el] of view.tgDrafts) {
    if (key.startsWith(`${chat}:`)) { el.remove(); view.tgDrafts.delete(key); }
  }
}

function tgAnswer(ev) {
  if (ev.user !== me().telegram_id || !ev.text) return;
  if (ev.alert) { $("alert-text").textContent = ev.text; if (!$("alert").open) $("alert").showModal(); }
  else toast(ev.text);
}

function showTyping() {
  const until = view.typingUntil.get(String(view.tgChat)) || 0;
  $("tg-typing").hidden = until < Date.now();
  if (until > Date.now()) setTimeout(showTyping, until - Date.now() + 50);
}

function skMessage(ev) {
  const key = `${ev.channel}:${ev.ts}:${ev.ephemeral_to || ""}`;
  const inPane = ev.thread_ts && view.threads.has(paneKey(ev));
  const home = room(view.skRooms, inPane ? paneKey(ev) : ev.channel, $("sk-scroll"));
  let el = view.sk.get(key);
  if (!el) { el = document.createElement("div"); view.sk.set(key, el); home.append(el); }
  el.className = `sk-msg${ev.ephemeral_to ? " ephemeral" : ""}`;
  el.dataset.ts = ev.ts;
  el.dataset.version = ev.version;
  if (ev.ephemeral_to) el.dataset.only = ev.ephemeral_to; else delete el.dataset.only;
  el.hidden = ev.deleted || (ev.ephemeral_to && ev.ephemeral_to !== me().slack_id);
  el.replaceChildren();
  const head = document.createElement("div");
  head.className = "sk-who";
  head.innerHTML = `<strong>${escapeHtml(personName(ev.user))}</strong>${ev.bot ? '<span class="app">APP</span>' : ""}`
    + (ev.version > 1 ? '<span class="edited">(edited)</span>' : "");
  el.append(head);
  if (ev.ephemeral_to) { const o = document.createElement("div"); o.className = "only"; o.textContent = "👁 Only visible to you"; el.append(o); }
  const body = document.createElement("div");
  body.className = "sk-body";
  if (ev.blocks && ev.blocks.length) renderBlocks(ev.blocks, ev, body); else body.innerHTML = mrkdwn(ev.text);
  el.append(body);
  if (inPane) paneFoot(paneKey(ev));
}

// ------------------------------------------------------------------ Slack's assistant pane
function skRoomKey() {
  if (view.skChannel !== PANE) return view.skChannel;
  return view.paneOf.get(me().slack_id) || null;
}

async function openPane() {  // what Slack does when the person opens the app's pane: a new thread
  if (view.opening) return;
  view.opening = true;
  try { await act("/api/slack/pane", {}); } finally { view.opening = false; }
}

function skThread(ev) {
  const key = paneKey(ev);
  const fresh = !view.threads.has(key);
  view.threads.set(key, ev);
  const home = room(view.skRooms, key, $("sk-scroll"));
  home.classList.add("sk-pane");
  home.dataset.thread = ev.thread_ts;
  let head = home.querySelector(".sk-pane-title");
  if (!head) { head = document.createElement("div"); head.className = "sk-pane-title"; home.prepend(head); }
  head.textContent = ev.title || "New chat";
  if (fresh) {
    view.paneOf.set(ev.user, key);
    if (view.skChannel === PANE && ev.user === me().slack_id) renderChatTabs();
  }
  paneFoot(key);
}

function paneFoot(key) {  // the status under the thread, then the suggested prompts: always last in the room
  const ev = view.threads.get(key);
  const home = view.skRooms.get(key);
  if (!ev || !home) return;
  let status = home.querySelector(".sk-status");
  if (!status) { status = document.createElement("div"); status.className = "sk-status"; }
  status.hidden = !ev.status;
  status.textContent = ev.status ? `Playground app ${ev.status}${ev.loading.length ? " — " + ev.loading[0] : ""}` : "";
  let prompts = home.querySelector(".sk-prompts");
  if (!prompts) { prompts = document.createElement("div"); prompts.className = "sk-prompts"; }
  prompts.replaceChildren();
  prompts.hidden = !ev.prompts.length;
  if (ev.prompts.length) {
    const title = document.createElement("div");
    title.className = "sk-prompts-title";
    title.textContent = ev.prompts_title || "Suggested";
    prompts.append(title);
  }
  for (const prompt of ev.prompts) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "sk-prompt";
    b.textContent = prompt.title;
    b.title = prompt.message;
    b.addEventListener("click", () => act("/api/slack/send", { channel: ev.channel, thread_ts: ev.thread_ts, text: prompt.message }));
    prompts.append(b);
  }
  home.append(status, prompts);
}

function skCommand(ev) {
  const home = room(view.skRooms, ev.channel, $("sk-scroll"));
  const el = document.createElement("div");
  el.className = "sk-msg command";
  el.dataset.only = ev.user;
  el.hidden = ev.user !== me().slack_id;
  el.textContent = `You used ${ev.text}`;
  home.append(el);
}

// ------------------------------------------------------------------ Slack modals (views.open, as the app sent it)
function renderModal() {
  const p = view.state && me();
  let open = null;
  for (const ev of view.modals.values()) if (p && ev.user === p.slack_id && !ev.closed) open = ev;
  $("sk-modal").hidden = !open;
  if (!open) { view.modalShown = null; return; }
  const v = open.view;
  const typed = {};
  if (view.modalShown === open.id) for (const el of $("sk-modal-body").querySelectorAll("[data-block]")) typed[el.dataset.block] = el.value;
  view.modalShown = open.id;
  $("sk-modal-form").dataset.view = open.id;
  $("sk-modal-title").textContent = v.title ? v.title.text : "";
  $("sk-modal-submit").textContent = v.submit ? v.submit.text : "Submit";
  $("sk-modal-close").textContent = v.close ? v.close.text : "Cancel";
  const body = $("sk-modal-body");
  body.replaceChildren();
  for (const block of v.blocks || []) {
    if (block.type !== "input") {
      const el = document.createElement("div");
      renderBlocks([block], { channel: "", ts: "" }, el);
      body.append(el);
      continue;
    }
    const e = block.element || {};
    const wrap = document.createElement("div");
    wrap.className = "sk-input";
    const label = document.createElement("label");
    label.htmlFor = `mi-${block.block_id}`;
    label.textContent = block.label ? block.label.text : block.block_id;
    if (block.optional) { const o = document.createElement("small"); o.textContent = " (optional)"; label.append(o); }
    const input = document.createElement(e.multiline ? "textarea" : "input");
    input.id = `mi-${block.block_id}`;
    input.dataset.block = block.block_id;
    if (e.max_length) input.maxLength = e.max_length;
    input.value = block.block_id in typed ? typed[block.block_id] : (e.initial_value || "");
    wrap.append(label, input);
    if (block.hint) { const h = document.createElement("div"); h.className = "hint"; h.textContent = block.hint.text; wrap.append(h); }
    const error = (open.errors || {})[block.block_id];
    if (error) { wrap.classList.add("invalid"); const r = document.createElement("div"); r.className = "error"; r.textContent = error; wrap.append(r); }
    body.append(wrap);
  }
}

async function submitModal(e) {
  e.preventDefault();
  const values = {};
  for (const el of $("sk-modal-body").querySelectorAll("[data-block]")) values[el.dataset.block] = el.value;
  await act("/api/slack/submit", { view: $("sk-modal-form").dataset.view, values });
}

function tourStep(ev) {
  if ($("alert").open) $("alert").close();  // an alert the step raised ends with its step
  if (/steps passed$/.test(ev.text)) tourButton(false);
  const li = document.createElement("li");
  li.textContent = ev.text;
  li.className = ev.text.startsWith("FAIL") ? "fail" : "";
  $("tour-log").append(li);
}

function tourButton(playing) {
  const b = $("tour-button");
  if (!b.dataset.idle) b.dataset.idle = b.textContent;
  b.textContent = playing ? "⏭ Next step" : b.dataset.idle;
  b.classList.toggle("playing", playing);
}

// ------------------------------------------------------------------ actions
async function act(path, body) {
  try {
    const resp = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ persona: view.persona, ...body }) });
    const data = await resp.json();
    if (!data.ok) toast(data.error || `the app answered HTTP ${data.status}`, true);
    return data;
  } catch (err) {
    toast(`could not reach the playground: ${err}`, true);
    return null;
  }
}

function toast(text, error) {
  const el = document.createElement("div");
  el.className = `toast${error ? " error" : ""}`;
  el.textContent = text;
  $("toasts").append(el);
  setTimeout(() => el.remove(), 4000);
}

function stickToBottom(scroll, force) {
  if (force || scroll.scrollHeight - scroll.scrollTop - scroll.clientHeight < 120) scroll.scrollTop = scroll.scrollHeight;
}

let inboxTimer = null;
function refreshInbox() {
  clearTimeout(inboxTimer);
  inboxTimer = setTimeout(async () => {
    const data = await (await fetch("/api/inbox")).json();
    const list = $("inbox-list");
    list.replaceChildren();
    for (const a of data.approvals) {
      const el = document.createElement("div");
      el.className = `approval ${a.state}`;
      const args = Object.entries(a.args || {}).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(", ");
      const who = a.decided_by ? ` · by ${a.decided_by} via ${a.decided_via}` : "";
      const tags = (a.risk ? `<span class="tag ${escapeHtml(a.risk)}">${escapeHtml(a.risk)} risk</span>` : "")
        + (a.revision ? `<span class="tag">edited ×${a.revision}</span>` : "");
      el.innerHTML = `<div><strong>${escapeHtml(a.label)}</strong> <span class="state">${escapeHtml(a.state)}</span>${tags}</div>`
        + `<div class="args">${escapeHtml(args)}</div>`
        + `<div class="meta">${escapeHtml(a.kind)} · asked by ${escapeHtml(a.requester)}${escapeHtml(who)}</div>`;
      list.append(el);
    }
    if (!data.approvals.length) list.textContent = "Nothing waiting. Try /send_payment ACME 120 as Alice.";
  }, 250);
}

function drain() {
  const batch = view.queue.splice(0);
  const tgStick = $("tg-scroll").scrollHeight - $("tg-scroll").scrollTop - $("tg-scroll").clientHeight < 120;
  const skStick = $("sk-scroll").scrollHeight - $("sk-scroll").scrollTop - $("sk-scroll").clientHeight < 120;
  for (const ev of batch) onEvent(ev);
  if (tgStick) stickToBottom($("tg-scroll"), true);
  if (skStick) stickToBottom($("sk-scroll"), true);
  if (batch.some((e) => e.type !== "tg.action")) refreshInbox();
  document.body.dataset.seq = String(batch.length ? batch[batch.length - 1].seq : document.body.dataset.seq || -1);
}

async function start() {
  view.state = await (await fetch("/api/state")).json();
  view.persona = view.state.personas[0].key;
  view.tgChat = me().telegram_id;
  view.skChannel = view.state.slack.work;
  $("agent").textContent = view.state.agent.text;
  $("agent").classList.toggle("on", view.state.agent.enabled);
  $("agent").classList.toggle("scripted", Boolean(view.state.agent.scripted));
  renderPersonas();
  renderChatTabs();
  refreshInbox();
  const stream = new EventSource("/api/stream?since=0");
  stream.onmessage = (msg) => {
    view.queue.push(JSON.parse(msg.data));
    if (view.queue.length === 1) requestAnimationFrame(drain);
  };
  $("tg-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const text = $("tg-input").value.trim();
    if (!text) return;
    $("tg-input").value = "";
    const reply = view.replyTo && String(view.replyTo.chat) === String(view.tgChat) ? { reply_to: view.replyTo.id } : {};
    await act("/api/telegram/send", { chat: view.tgChat, text, ...reply });
  });
  $("tg-replying-cancel").addEventListener("click", () => {
    if (view.replyTo) view.dismissed.add(`${view.replyTo.chat}:${view.replyTo.id}`);
    renderReplying();
  });
  $("sk-modal-form").addEventListener("submit", submitModal);
  for (const id of ["sk-modal-close", "sk-modal-x"]) {
    $(id).addEventListener("click", () => act("/api/slack/close", { view: $("sk-modal-form").dataset.view }));
  }
  $("sk-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const text = $("sk-input").value.trim();
    if (!text) return;
    $("sk-input").value = "";
    const pane = view.skChannel === PANE ? view.threads.get(skRoomKey() || "") : null;
    if (pane) await act("/api/slack/send", { channel: pane.channel, thread_ts: pane.thread_ts, text });
    else if (view.skChannel !== PANE) await act("/api/slack/send", { channel: view.skChannel, text });
  });
  $("tour-button").addEventListener("click", async () => {
    const data = await act("/api/tour", {});  // while it plays: on to the next step
    if (data && data.ok && !data.skipped) tourButton(true);
  });
  if (view.state.tour_running) tourButton(true);
  $("clock-button").addEventListener("click", async () => {
    const data = await act("/api/clock", { advance: 3600 });
    if (data && data.ok) toast(`An hour passed: ${data.acted_on} approval(s) acted on`);
  });
  $("clock-15").addEventListener("click", async () => {
    const data = await act("/api/clock", { advance: 900 });
    if (data && data.ok) toast(`15 minutes passed: ${data.acted_on} approval(s) acted on`);
  });
  for (const b of document.querySelectorAll(".tabs button")) {
    b.addEventListener("click", () => { document.body.dataset.pane = b.dataset.show; });
  }
  document.body.dataset.ready = "1";
}

start();
