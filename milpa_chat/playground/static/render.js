// How the platforms draw what the bots sent: Telegram's HTML (its allowed tags only), Slack's mrkdwn and
// Block Kit. Pure functions over the records of the local servers; used by app.js.
"use strict";

// ------------------------------------------------------------------ Telegram's HTML (its allowed tags only)
const TG_TAGS = { b: "b", strong: "b", i: "i", em: "i", u: "u", ins: "u", s: "s", strike: "s", del: "s",
  code: "code", pre: "pre", a: "a", blockquote: "blockquote", "tg-spoiler": "span", span: "span", "tg-emoji": "span" };

function tgHtml(source, into) {
  const doc = new DOMParser().parseFromString(`<body>${source}</body>`, "text/html");
  copyAllowed(doc.body, into);
}

function copyAllowed(from, into) {
  for (const node of from.childNodes) {
    if (node.nodeType === Node.TEXT_NODE) { into.append(node.textContent); continue; }
    if (node.nodeType !== Node.ELEMENT_NODE) continue;
    const tag = TG_TAGS[node.tagName.toLowerCase()];
    if (!tag || (node.tagName.toLowerCase() === "span" && !node.classList.contains("tg-spoiler"))) {
      copyAllowed(node, into);
      continue;
    }
    const el = document.createElement(tag);
    const name = node.tagName.toLowerCase();
    if (name === "tg-spoiler" || name === "span") el.className = "spoiler";
    if (name === "a") {
      const href = node.getAttribute("href") || "";
      if (/^(https?:|tg:|mailto:)/i.test(href)) { el.href = href; el.target = "_blank"; el.rel = "noopener"; }
    }
    if (name === "code" && /^language-[\w+-]+$/.test(node.className)) el.className = node.className;
    copyAllowed(node, el);
    into.append(el);
  }
}

// ------------------------------------------------------------------ Slack's mrkdwn
const escapeHtml = (s) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
const slackDecode = (s) => s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");

function mrkdwn(text) {
  let html = "";
  for (const [i, part] of String(text || "").split(/<([^<>]+)>/).entries()) {
    if (i % 2 === 0) { html += inline(escapeHtml(slackDecode(part))); continue; }
    const [target, label] = part.split("|", 2);
    if (target.startsWith("@")) html += `<span class="mention">@${escapeHtml(personName(target.slice(1)))}</span>`;
    else if (target.startsWith("#")) html += `<span class="mention">#${escapeHtml(label || target.slice(1))}</span>`;
    else if (target.startsWith("!")) html += `<span class="mention">@${escapeHtml(target.slice(1))}</span>`;
    else if (/^(https?:|mailto:)/.test(target)) html += `<a href="${escapeHtml(target)}" target="_blank" rel="noopener">${escapeHtml(slackDecode(label || target))}</a>`;
    else html += escapeHtml(`<${part}>`);
  }
  return html;
}

function inline(s) {
  return s.replace(/```([\s\S]+?)```/g, "<pre>$1</pre>")
    .replace(/`([^`\n]+)`/g, "<code>$1</code>")
    .replace(/(^|[\s(])\*([^*\n]+)\*/g, "$1<b>$2</b>")
    .replace(/(^|[\s(])_([^_\n]+)_/g, "$1<i>$2</i>")
    .replace(/(^|[\s(])~([^~\n]+)~/g, "$1<s>$2</s>");
}

function textObject(obj) {
  const el = document.createElement("div");
  if (!obj) return el;
  if (obj.type === "mrkdwn") el.innerHTML = mrkdwn(obj.text);
  else el.textContent = obj.text || "";
  return el;
}

// ------------------------------------------------------------------ Block Kit
function renderBlocks(blocks, message, into) {
  for (const block of blocks) {
    const fn = BLOCKS[block.type];
    const el = fn ? fn(block, message) : fallbackBlock(block);
    el.classList.add("blk", `blk-${block.type}`);
    into.append(el);
  }
}

const BLOCKS = {
  header: (b) => { const el = document.createElement("div"); el.textContent = b.text ? b.text.text : ""; return el; },
  divider: () => document.createElement("hr"),
  section: (b, m) => {
    const el = document.createElement("div");
    const body = document.createElement("div");
    body.className = "sec-body";
    if (b.text) body.append(textObject(b.text));
    if (b.fields) {
      const grid = document.createElement("div");
      grid.className = "fields";
      for (const f of b.fields) grid.append(textObject(f));
      body.append(grid);
    }
    el.append(body);
    if (b.accessory) el.append(element(b.accessory, m));
    return el;
  },
  context: (b) => {
    const el = document.createElement("div");
    for (const e of b.elements || []) {
      if (e.type === "image") { const s = document.createElement("span"); s.textContent = `[${e.alt_text || "image"}]`; el.append(s); }
      else { const t = textObject(e); t.classList.add("ctx"); el.append(t); }
    }
    return el;
  },
  actions: (b, m) => {
    const el = document.createElement("div");
    for (const e of b.elements || []) el.append(element(e, m));
    return el;
  },
  image: (b) => { const el = document.createElement("div"); el.textContent = `[image: ${b.alt_text || ""}]`; return el; },
};

function fallbackBlock(block) {
  const el = document.createElement("div");
  const texts = [];
  (function walk(v) {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === "object") { if (typeof v.text === "string") texts.push(v.text); Object.values(v).forEach(walk); }
  })(block);
  el.textContent = texts.join(" ");
  return el;
}
