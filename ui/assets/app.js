// lossless memory explorer: a page over the JSON API of package ui.
// Vanilla JS, no framework, nothing from the network. Every value from the
// store is put in the page with textContent (never innerHTML): stored
// messages may hold HTML or script.
"use strict";

(() => {
  const TOKEN = new URLSearchParams(location.search).get("token") || "";
  // EMBEDDED: the page is in the sandboxed frame of OpenClaw's Control UI
  // (the plugin's Memory tab). Its document's origin is opaque, so its API
  // requests are cross-origin to the gateway and carry the gateway's frame
  // grant (a cookie) only with credentials "include"; a click on a session
  // asks the dashboard to open it in chat.
  const EMBEDDED = window.parent !== window;
  // BASE: the page's own directory; every URL is relative to it, so the
  // page works at / (lossless ui) and under the plugin's route.
  const BASE = new URL(".", location.href);
  // PAGE_KEY: the key a framing proxy put in the page (the OpenClaw
  // plugin's Memory tab answers API requests that carry it only).
  const PAGE_KEY = (document.querySelector('meta[name="lossless-page-key"]') || {}).content || "";
  const main = document.querySelector("main[data-test=view]");
  const PAGE = 50;
  let generation = 0; // bumped on every render: stale answers are dropped
  const state = { sessions: { offset: 0, q: "", agent: "" } };

  // ---- the API ----

  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  async function api(path, params, asText) {
    const u = new URL(path.replace(/^\//, ""), BASE);
    if (PAGE_KEY) u.searchParams.set("k", PAGE_KEY);
    for (const [k, v] of Object.entries(params || {})) {
      if (v !== undefined && v !== null && v !== "") u.searchParams.set(k, String(v));
    }
    let res;
    try {
      res = await fetch(u, { headers: TOKEN ? { "X-Lossless-Token": TOKEN } : {}, credentials: EMBEDDED ? "include" : "same-origin", cache: "no-store" });
    } catch (e) {
      throw new ApiError(0, EMBEDDED ? "The request was refused or blocked (the browser may be blocking the dashboard's cookie for this frame, as it does with third-party cookies blocked; or the gateway is gone)" : "The explorer's server does not answer (is lossless still running?)");
    }
    const body = await res.text();
    if (!res.ok) {
      let msg = body;
      try { msg = JSON.parse(body).error || body; } catch (e) { /* a text answer (403) */ }
      throw new ApiError(res.status, msg);
    }
    return asText ? body : JSON.parse(body);
  }

  // ---- DOM and formatting ----

  // h(tag, attrs, ...children): an element; string children become text
  // nodes, attrs with "on" prefix become listeners, others attributes.
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else if (k === "text") el.textContent = v;
      else el.setAttribute(k, v === true ? "" : String(v));
    }
    append(el, children);
    return el;
  }
  // fill replaces el's children (null and false are skipped).
  const fill = (el, children) => { el.replaceChildren(); return append(el, children); };
  function append(el, children) {
    for (const c of children.flat(Infinity)) {
      if (c === undefined || c === null || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }

  const nf = new Intl.NumberFormat("en-US");
  const num = (n) => nf.format(n || 0);
  function bytes(n) {
    n = n || 0;
    if (n < 1024) return n + " B";
    const units = ["KiB", "MiB", "GiB", "TiB"];
    let i = -1;
    do { n /= 1024; i++; } while (n >= 1024 && i < units.length - 1);
    return n.toFixed(n < 10 ? 1 : 0) + " " + units[i];
  }
  function when(ms) {
    if (!ms) return "–";
    const d = new Date(ms);
    const p = (x) => String(x).padStart(2, "0");
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
  }
  const timeEl = (ms) => h("time", { datetime: ms ? new Date(ms).toISOString() : undefined, title: ms ? new Date(ms).toISOString() : undefined }, when(ms));
  function span(a, b) {
    if (!a && !b) return "–";
    if (when(a).slice(0, 10) === when(b).slice(0, 10)) return when(a) + " – " + when(b).slice(11);
    return when(a) + " – " + when(b);
  }
  const badge = (text, cls, attrs) => h("span", Object.assign({ class: "badge " + (cls || "") }, attrs || {}), text);
  const depthBadge = (d) => badge("d" + d, "depth d" + Math.min(d, 4), { title: "depth " + d + (d === 0 ? " (leaf: raw messages)" : " (condenses depth " + (d - 1) + ")") });
  const FALLBACK = { truncate: "cut to size: the summarizer failed or stayed too long", aggressive: "aggressive retry: the first summary was too long",
    refused: "extractive: the model's answer was no summary (empty, a canned reply, too long, identifiers lost), also at the stricter retry" };

  // shortName shows a long session name by its start (the whole in title).
  const shortName = (s, attrs) => h("span", Object.assign({ class: "mono", title: s }, attrs || {}), s.length > 18 ? s.slice(0, 13) + "…" : s);

  function encodePath(...parts) { return parts.map(encodeURIComponent).join("/"); }

  // openInChat asks the Control UI (the parent of the frame) to open the
  // session with this key in its chat: the one message a plugin tab may
  // send it (openclaw-plugin-session-open); the dashboard checks the rest.
  function openInChat(key) {
    window.parent.postMessage({ type: "openclaw-plugin-session-open", sessionKey: key }, location.origin);
  }
  // chatLink is the "open in chat" button of a session (embedded only, for
  // a session stored with its OpenClaw key).
  const keyQuery = (key) => key ? "?" + new URLSearchParams({ key }) : "";
  function chatLink(key) {
    if (!EMBEDDED || !key) return null;
    return h("button", { type: "button", class: "chat", "data-test": "open-chat", "data-key": key, title: "open " + key + " in OpenClaw's chat", onclick: () => openInChat(key) }, "open in chat");
  }

  // ---- view lifecycle ----

  // begin starts rendering view: a fresh generation, data-state loading.
  function begin(view) {
    const gen = ++generation;
    main.setAttribute("data-view", view);
    main.setAttribute("data-state", "loading");
    main.setAttribute("aria-busy", "true");
    main.replaceChildren();
    for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.nav === view || (view === "context" || view === "dag") && a.dataset.nav === "sessions");
    return gen;
  }
  const live = (gen) => gen === generation;
  function ready(gen) {
    if (!live(gen)) return;
    main.setAttribute("data-state", "ready");
    main.removeAttribute("aria-busy");
  }
  function loading(gen) {
    if (live(gen)) main.setAttribute("data-state", "loading");
  }
  // failed shows err in the view (data-state error); a 503 (the engine not
  // open yet) is retried every two seconds.
  function failed(gen, err, retry) {
    if (!live(gen)) return;
    main.setAttribute("data-state", "error");
    main.removeAttribute("aria-busy");
    let box = main.querySelector(":scope > .error");
    if (!box) {
      box = h("div", { class: "error", role: "alert", "data-test": "error" });
      main.prepend(box);
    }
    const notOpen = err && err.status === 503;
    fill(box, [
      h("strong", {}, notOpen ? "The engine is not open yet." : "Something went wrong."),
      " ", err && err.message ? err.message : String(err),
      notOpen ? h("p", { class: "muted" }, "The serving process opens its engine when its host first calls it (OpenClaw: the first turn). This page retries every two seconds.") : null]);
    if (notOpen && retry) setTimeout(() => { if (live(gen)) retry(); }, 2000);
  }

  // bar is a row of inputs with a button that runs go, also on Enter in an
  // input (not in a textarea). Not a <form>: the Control UI's sandboxed
  // frame (no allow-forms) blocks form submission, and with it the submit
  // event.
  function bar(go, attrs, ...children) {
    const el = h("div", Object.assign({ class: "bar", role: "search" }, attrs || {}), ...children);
    el.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && ev.target instanceof HTMLInputElement) { ev.preventDefault(); go(); }
    });
    for (const b of el.querySelectorAll("button[data-go]")) b.addEventListener("click", go);
    return el;
  }

  function pager(total, offset, limit, go) {
    const last = Math.min(offset + limit, total);
    return h("div", { class: "pager" },
      h("button", { type: "button", "data-test": "prev-page", disabled: offset <= 0, onclick: () => go(Math.max(0, offset - limit)) }, "← Previous"),
      h("span", { class: "muted" }, total ? `${num(offset + 1)}–${num(last)} of ${num(total)}` : "none"),
      h("button", { type: "button", "data-test": "next-page", disabled: last >= total, onclick: () => go(offset + limit) }, "Next →"));
  }

  // ---- sessions ----

  async function viewSessions() {
    const gen = begin("sessions");
    const st = state.sessions;
    const q = h("input", { type: "search", placeholder: "filter by session id or key", value: st.q, "aria-label": "filter sessions" });
    const agentSel = h("select", { "aria-label": "agent" }, h("option", { value: "" }, "every agent"));
    const form = bar(() => { st.q = q.value.trim(); st.agent = agentSel.value; st.offset = 0; viewSessions(); }, {},
      q, agentSel, h("button", { type: "button", "data-go": true, "data-test": "filter" }, "Filter"));
    const cards = h("section", { class: "cards" });
    const table = h("div", { class: "table-wrap" });
    main.append(h("h1", {}, "Sessions"), cards, form, table);
    const load = async () => {
      try {
        const [ov, list] = await Promise.all([api("/api/overview"), api("/api/sessions", { agent: st.agent, q: st.q, offset: st.offset, limit: PAGE })]);
        if (!live(gen)) return;
        showStore(ov);
        fill(agentSel, [h("option", { value: "" }, "every agent"), ov.agents.map((a) => h("option", { value: a.agent, selected: a.agent === st.agent }, a.agent))]);
        fill(cards, ov.agents.map((a) => h("div", { class: "card" },
          h("div", { class: "card-title" }, "agent ", h("b", {}, a.agent)),
          h("dl", {}, h("dt", {}, "conversations"), h("dd", {}, num(a.conversations)), h("dt", {}, "messages"), h("dd", {}, num(a.messages)),
            h("dt", {}, "tokens stored"), h("dd", {}, num(a.tokens)), h("dt", {}, "summaries"), h("dd", {}, num(a.summaries)),
            h("dt", {}, "raw JSON"), h("dd", {}, bytes(a.bytes))))));
        fill(table, [sessionTable(list), pager(list.total, list.offset, list.limit, (o) => { st.offset = o; viewSessions(); })]);
        ready(gen);
      } catch (e) { failed(gen, e, load); }
    };
    await load();
  }

  function sessionTable(list) {
    if (!list.items.length) return h("p", { class: "muted" }, "No sessions stored" + (state.sessions.q ? " match this filter." : " yet: import one (lossless import FILE) or run a turn."));
    const head = ["Agent", "Session", "Messages", "Tokens stored", "Active context", "Ratio", "Summaries in context", "First message", "Last message", ""];
    return h("table", { class: "sessions" },
      h("thead", {}, h("tr", {}, head.map((t) => h("th", {}, t)))),
      h("tbody", {}, list.items.map((s) => h("tr", { "data-test": "session-row", "data-agent": s.agent, "data-session": s.session },
        h("td", {}, s.agent),
        h("td", { class: "mono", title: "conversation " + s.id + (s.key ? "\nkey " + s.key : "") + (s.sessionIds.length > 1 ? "\nsessions " + s.sessionIds.join(", ") : "") },
          s.session, s.sessionIds.length > 1 ? h("span", { class: "muted" }, ` (+${s.sessionIds.length - 1} earlier)`) : null,
          s.retiring ? badge("retiring", "warn", { title: "an interrupted retention pass left it partly deleted" }) : null),
        h("td", { class: "num" }, num(s.messages)),
        h("td", { class: "num" }, num(s.tokens)),
        h("td", { class: "num", title: `${num(s.contextItems)} context items` + (s.partial ? " (more not read: the figure is a lower bound)" : "") }, (s.partial ? "≥ " : "") + num(s.activeTokens)),
        h("td", { class: "num" }, s.ratio ? (s.partial ? "≤ " : "") + s.ratio.toFixed(s.ratio < 10 ? 2 : 1) + "×" : "–"),
        h("td", {}, s.summariesByDepth.length ? s.summariesByDepth.map((n, d) => n ? h("span", { class: "depth-count" }, depthBadge(d), "×" + n) : null) : h("span", { class: "muted" }, s.summaries ? `${num(s.summaries)} stored` : "none")),
        h("td", {}, timeEl(s.firstMessage)),
        h("td", {}, timeEl(s.lastMessage)),
        h("td", { class: "actions" },
          chatLink(s.key),
          h("a", { "data-test": "open-context", href: "#/context/" + encodePath(s.agent, s.session) + keyQuery(s.key) }, "context"),
          h("a", { "data-test": "open-dag", href: "#/dag/" + encodePath(s.agent, s.session) + keyQuery(s.key) }, "DAG"),
          h("a", { href: "#/search?" + new URLSearchParams({ agent: s.agent, session: s.session }) }, "search"))))));
  }

  function showStore(ov) {
    const el = document.getElementById("store");
    el.textContent = `${ov.backend} · ${ov.store}`;
    el.title = `format ${ov.format}, ${bytes(ov.diskBytes)} allocated on disk (du), recall index ${bytes(ov.indexBytes)}, engine ${ov.version}, tokenizer ${ov.tokenizer}`;
  }

  // ---- context ----

  const contextForm = { budget: "", prompt: "" };
  const PART_LABEL = { summaries: "Summaries", tail: "Fresh tail", recall: "Recall", system: "System prompt addition" };

  function viewContext(agent, session, key) {
    const gen = begin("context");
    const budget = h("input", { type: "number", min: "1", step: "1", "data-test": "budget", placeholder: "default", value: contextForm.budget, "aria-label": "token budget" });
    const prompt = h("textarea", { "data-test": "prompt", rows: "2", placeholder: "the next user prompt (the recall query; optional)", "aria-label": "prompt" });
    prompt.value = contextForm.prompt;
    const out = h("div", { class: "context-out" });
    const run = async () => {
      contextForm.budget = budget.value.trim();
      contextForm.prompt = prompt.value;
      loading(gen);
      const old = main.querySelector(":scope > .error");
      if (old) old.remove();
      try {
        const c = await api("/api/context", { agent, session, key, last: 1, budget: contextForm.budget, prompt: contextForm.prompt });
        if (!live(gen)) return;
        fill(out, contextBody(c, agent, session));
        ready(gen);
      } catch (e) { failed(gen, e, run); }
    };
    main.append(
      h("h1", {}, "Next context ", h("span", { class: "mono sub" }, agent + " / " + session), " ", chatLink(key)),
      h("p", { class: "muted" }, "What assemble would build now for this budget and prompt — the same code and numbers as ", h("code", {}, "lossless assemble --json"), ". Nothing is stored."),
      bar(() => run(), {},
        h("label", {}, "Budget ", budget), prompt, h("button", { type: "button", "data-go": true, "data-test": "assemble" }, "Assemble")),
      h("p", {}, h("a", { href: "#/dag/" + encodePath(agent, session) + keyQuery(key) }, "the summary DAG →")),
      out);
    run();
  }

  // lastBox shows the session's last assemble the serving process answered
  // (a turn's first, the one with the prompt), when the page asked for it.
  function lastBox(c) {
    const l = c.last;
    if (!l) return h("p", { class: "muted", "data-test": "last-assemble", "data-found": "0" }, "No assemble of this session was recorded since the engine process started: this is the next context for the budget and prompt above (empty: the engine's default budget, no prompt).");
    return h("section", { class: "card last", "data-test": "last-assemble", "data-found": "1" },
      h("div", { class: "card-title" }, "The last turn's assemble, ", timeEl(l.at)),
      h("p", {}, `Budget ${l.budget ? num(l.budget) : "the engine's default"} · ${num(l.messages)} messages · ${num(l.estimatedTokens)} estimated tokens`),
      h("p", {}, "Prompt: ", h("q", { "data-test": "last-prompt" }, oneLine(l.prompt, 300))),
      l.cut ? h("p", { class: "warn-box" }, h("b", {}, "Cut: "), l.cut.reason) : h("p", { class: "muted" }, "Nothing was cut."),
      h("p", { class: "muted" }, contextForm.budget || contextForm.prompt ? "Below: the context for the budget and prompt above." : "Below: the same call assembled again now (its budget and prompt), part by part, with what recall adds and why."));
  }

  function contextBody(c, agent, session) {
    const budget = c.effectiveBudget || 1;
    const scale = Math.max(budget, c.estimatedTokens, 1);
    const bar = h("div", { class: "tokenbar", role: "img", "aria-label": `${c.estimatedTokens} of ${budget} tokens` });
    for (const p of c.parts) {
      if (!p.tokens) continue;
      bar.append(h("div", { class: "seg part-" + p.part, title: `${PART_LABEL[p.part]}: ${num(p.tokens)} tokens` }));
      bar.lastChild.style.width = (100 * p.tokens / scale) + "%";
    }
    const line = h("div", { class: "budget-line" + (budget / scale > 0.75 ? " near-end" : ""), "data-test": "budget-line", title: `budget ${num(budget)} tokens` }, h("span", {}, "budget " + num(budget)));
    line.style.left = (100 * budget / scale) + "%";
    bar.append(line);
    const parts = h("ul", { class: "parts" }, c.parts.map((p) => h("li", { "data-test": "part", "data-part": p.part },
      h("span", { class: "swatch part-" + p.part }), h("b", {}, PART_LABEL[p.part] || p.part), " ",
      h("span", { "data-test": "part-tokens", class: "num" }, String(p.tokens)), " tokens",
      h("span", { class: "muted" }, ` · ${p.count} ${p.part === "system" ? "text" : "message" + (p.count === 1 ? "" : "s")}`))));
    const cut = c.cut ? h("p", { class: "warn-box", "data-test": "context-cut" }, h("b", {}, "Cut: "), c.cut.reason || "older items did not fit the budget") :
      h("p", { class: "muted", "data-test": "context-cut" }, "Nothing was cut: the whole active context fits the budget.");
    const r = c.recall || {};
    const recallLine = h("p", { class: "recall-status" }, "Recall: ", badge(r.status || "off", "recall-" + (r.status || "off")),
      r.items ? ` ${r.items} items` : "", r.reason ? " — " + r.reason : "", r.partial ? badge("partial", "warn") : null);
    const msgs = h("ol", { class: "messages", start: "0" }, c.messages.map((m) => h("li", { "data-test": "context-message", "data-part": m.part, class: "msg part-" + m.part },
      h("div", { class: "msg-head" },
        badge(m.role, "role"), badge(PART_LABEL[m.part] || m.part, "part part-" + m.part), h("span", { class: "num" }, num(m.tokens) + " tokens"),
        m.timestamp ? timeEl(m.timestamp) : null,
        m.summaryId ? h("a", { class: "mono", href: "#/dag/" + encodePath(agent, session), title: "open the DAG" }, m.summaryId) : null,
        m.seq ? h("span", { class: "mono muted" }, "seq " + m.seq) : null),
      h("details", {}, h("summary", {}, oneLine(m.text, 200)), h("pre", { class: "text" }, m.text), m.truncated ? h("p", { class: "muted" }, "(cut here; the whole message is in the DAG view or lossless export)") : null))));
    return [
      lastBox(c),
      h("div", { class: "total" }, h("span", { class: "big", "data-test": "context-total" }, String(c.estimatedTokens)), " estimated tokens of a ",
        h("b", {}, num(budget)), "-token budget", c.budget ? "" : h("span", { class: "muted" }, " (the engine's default)"),
        ` · ${c.messages.length} messages`),
      bar, parts, cut, recallLine,
      c.systemPromptAddition ? h("details", { class: "addition" }, h("summary", {}, `System prompt addition (${c.systemPromptAdditionTokens} tokens)`), h("pre", { class: "text" }, c.systemPromptAddition)) : null,
      c.messages.length ? msgs : h("p", { class: "muted" }, "The context is empty.")];
  }

  function oneLine(s, n) {
    s = (s || "").replace(/\s+/g, " ").trim();
    return s.length > n ? s.slice(0, n - 1) + "…" : s;
  }

  // ---- the summary DAG ----

  function viewDag(agent, session, offset, depth, key) {
    const gen = begin("dag");
    offset = offset || 0;
    const depthSel = h("select", { "aria-label": "which summaries", onchange: () => viewDag(agent, session, 0, depthSel.value, key) },
      h("option", { value: "" }, "in the active context (the roots)"),
      [0, 1, 2, 3, 4, 5].map((d) => h("option", { value: String(d), selected: String(depth) === String(d) }, "every summary of depth " + d)));
    const list = h("div", { class: "dag" });
    main.append(
      h("h1", {}, "Summary DAG ", h("span", { class: "mono sub" }, agent + " / " + session), " ", chatLink(key)),
      h("p", { class: "muted" }, "Each summary covers its sources: summaries of the depth below, or, for a leaf (d0), the raw messages, shown byte for byte as stored. ",
        h("a", { href: "#/context/" + encodePath(agent, session) + keyQuery(key) }, "the next context →")),
      h("div", { class: "bar" }, h("label", {}, "Show ", depthSel)), list);
    const load = async () => {
      try {
        const res = await api("/api/summaries", { agent, session, depth: depth === undefined ? "" : depth, offset, limit: PAGE });
        if (!live(gen)) return;
        fill(list, [
          res.partial ? h("p", { class: "warn-box" }, `The active context is longer than the explorer reads (its first ${num(res.total)} summaries among the first items are listed).`) : null,
          res.items.length ? h("div", {}, res.items.map((s) => summaryNode(agent, session, s))) : h("p", { class: "muted" }, depth === undefined || depth === "" ? "No summaries in the active context: the session has not been compacted." : "No summaries of this depth."),
          pager(res.total, res.offset, res.limit, (o) => viewDag(agent, session, o, depth, key))]);
        ready(gen);
      } catch (e) { failed(gen, e, load); }
    };
    load();
  }

  function summaryNode(agent, session, s) {
    const kids = h("div", { class: "children" });
    const body = h("div", { class: "node-body", hidden: true });
    const btn = h("button", { type: "button", "data-test": "expand", "aria-expanded": "false" }, "expand");
    const node = h("div", { class: "node", "data-test": "summary-node", "data-id": s.id },
      h("div", { class: "node-head" }, btn, depthBadge(s.depth), h("span", { class: "mono" }, s.id),
        s.method && FALLBACK[s.method] ? badge(s.method, "warn", { title: s.refused ? "refused: " + s.refused : FALLBACK[s.method] }) : (s.method ? badge(s.method, "muted-badge") : null),
        h("span", { class: "muted" }, span(s.earliest, s.latest)),
        h("span", {}, `${num(s.sourceCount)} ${s.depth === 0 ? "messages" : "summaries"} · ${num(s.descendantCount)} messages, ${num(s.descendantTokens)} tokens → ${num(s.tokens)}`)),
      body);
    let loaded = false;
    const load = async (offset) => {
      btn.disabled = true;
      try {
        const res = await api("/api/summary", { agent, session, id: s.id, offset, limit: PAGE });
        if (!loaded) body.prepend(h("pre", { class: "text summary-text" }, res.summary.text));
        loaded = true;
        for (const c of res.items) kids.append(c.kind === "summary" ? summaryNode(agent, session, c) : rawMessage(agent, session, c));
        const more = kids.querySelector(":scope > .more");
        if (more) more.remove();
        const next = res.offset + res.items.length;
        if (next < res.total) kids.append(h("button", { type: "button", class: "more", "data-test": "children-more", onclick: () => load(next) }, `more (${num(res.total - next)} left)`));
        body.hidden = false;
        btn.textContent = "collapse";
        btn.setAttribute("aria-expanded", "true");
      } catch (e) {
        body.hidden = false;
        body.append(h("p", { class: "error" }, e.message));
      }
      btn.disabled = false;
    };
    body.append(kids);
    btn.addEventListener("click", () => {
      if (!loaded) return load(0);
      body.hidden = !body.hidden;
      btn.textContent = body.hidden ? "expand" : "collapse";
      btn.setAttribute("aria-expanded", String(!body.hidden));
    });
    return node;
  }

  function rawMessage(agent, session, m) {
    const pre = h("pre", { "data-test": "raw-bytes", class: "raw", hidden: true });
    const el = h("div", { class: "raw-message", "data-test": "raw-message", "data-seq": String(m.seq) });
    const status = h("span", { class: "muted", role: "status" });
    let raw = null;
    const fetchRaw = async () => {
      if (raw === null) {
        raw = await api("/api/message", { agent, session, seq: m.seq }, true);
        pre.textContent = raw; // the stored bytes as text, never parsed as HTML
        el.setAttribute("data-loaded", "1");
      }
      return raw;
    };
    const show = h("button", { type: "button", "data-test": "show-raw", onclick: async () => {
      try {
        await fetchRaw();
        pre.hidden = !pre.hidden;
        show.textContent = pre.hidden ? "raw bytes" : "hide";
        status.textContent = pre.hidden ? "" : `${num(new TextEncoder().encode(raw).length)} bytes, as stored`;
      } catch (e) { status.textContent = e.message; }
    } }, "raw bytes");
    const copy = h("button", { type: "button", "data-test": "copy", onclick: async () => {
      try {
        const text = await fetchRaw();
        await navigator.clipboard.writeText(text);
        status.textContent = "copied";
      } catch (e) {
        pre.hidden = false;
        const sel = window.getSelection();
        const r = document.createRange();
        r.selectNodeContents(pre);
        sel.removeAllRanges();
        sel.addRange(r);
        status.textContent = "selected: press Ctrl+C (the clipboard is not available here)";
      }
    } }, "copy");
    append(el, [h("div", { class: "msg-head" }, badge(m.role || "?", "role"), h("span", { class: "mono muted" }, "seq " + m.seq),
      h("span", { class: "num" }, num(m.tokens) + " tokens"), timeEl(m.timestamp), show, copy, status),
      h("div", { class: "preview" }, m.preview || ""), pre]);
    return el;
  }

  // ---- search ----

  const searchForm = { q: "", agent: "", session: "", regex: false };

  function viewSearch(params) {
    const gen = begin("search");
    if (params.has("agent")) searchForm.agent = params.get("agent");
    if (params.has("session")) searchForm.session = params.get("session");
    if (params.has("q")) searchForm.q = params.get("q");
    const q = h("input", { type: "search", "data-test": "search-query", placeholder: "words, a regular expression, or the next prompt", value: searchForm.q, "aria-label": "query" });
    const agent = h("input", { type: "text", placeholder: "agent (default: the engine's)", value: searchForm.agent, "aria-label": "agent", size: "14" });
    const session = h("input", { type: "text", placeholder: "session (optional)", value: searchForm.session, "aria-label": "session", size: "20" });
    const regex = h("input", { type: "checkbox", checked: searchForm.regex });
    const grepOut = h("section", { class: "grep" });
    const recallOut = h("section", { class: "recall" });
    // run searches from cursor ("" : the start). Grep reads a bounded
    // slice of the history per request: the page asks for the next slices
    // until it has a screenful of hits, or has read everything, or 8 s.
    const run = async (cursor) => {
      Object.assign(searchForm, { q: q.value.trim(), agent: agent.value.trim(), session: session.value.trim(), regex: regex.checked });
      if (!searchForm.q) { ready(gen); return; }
      loading(gen);
      const old = main.querySelector(":scope > .error");
      if (old) old.remove();
      try {
        const recall = cursor ? null : api("/api/recall", { prompt: searchForm.q, agent: searchForm.agent, session: searchForm.session });
        if (recall) recall.catch(() => {}); // awaited below; no unhandled rejection meanwhile
        const acc = { items: [], scanned: 0, next: cursor };
        const t0 = Date.now();
        do {
          const g = await api("/api/grep", { q: searchForm.q, agent: searchForm.agent, session: searchForm.session, regex: searchForm.regex ? 1 : "", cursor: acc.next });
          if (!live(gen)) return;
          acc.items.push(...g.items);
          acc.scanned += g.scanned;
          acc.next = g.next || "";
          fill(grepOut, grepBody(acc, cursor, run));
        } while (acc.next && acc.items.length < 20 && Date.now() - t0 < 8000);
        if (recall) {
          const r = await recall;
          if (!live(gen)) return;
          fill(recallOut, recallBody(r));
        }
        ready(gen);
      } catch (e) { failed(gen, e, () => run(cursor)); }
    };
    main.append(h("h1", {}, "Search"),
      bar(() => run(""), {},
        q, agent, session, h("label", {}, regex, " regex"), h("button", { type: "button", "data-go": true, "data-test": "search-go" }, "Search")),
      recallOut, grepOut);
    if (searchForm.q) run("");
    else {
      recallOut.append(h("p", { class: "muted" }, "Recall: what the engine would recall for a prompt, and why (score, relevance against the gate, the prompt's terms each item holds)."));
      grepOut.append(h("p", { class: "muted" }, "Grep: every word must occur (case-insensitive), or a regular expression; newest first."));
      ready(gen);
    }
  }

  function grepBody(g, cursor, run) {
    const hits = g.items.map((x) => h("li", { class: "hit", "data-test": "grep-hit", "data-session": x.session, "data-seq": x.seq ? String(x.seq) : undefined, "data-summary": x.summaryId || undefined },
      h("div", { class: "msg-head" }, x.kind === "summary" ? badge("summary", "part part-summaries") : badge(x.role || "message", "role"),
        h("a", { href: "#/dag/" + encodePath(x.agent, x.session) }, shortName(x.session)),
        x.seq ? h("span", { class: "mono muted" }, "seq " + x.seq) : h("span", { class: "mono muted" }, x.summaryId), timeEl(x.timestamp)),
      h("div", { class: "snippet" }, x.snippet)));
    return [h("h2", {}, "Grep"),
      h("p", { class: "muted" }, `${g.items.length} hits in ${num(g.scanned)} messages and summaries read` + (g.next ? "; more to read" : "") + "."),
      hits.length ? h("ol", { class: "hits" }, hits) : h("p", { class: "muted" }, "No hits" + (g.next ? " yet" : "") + "."),
      h("div", { class: "pager" },
        h("button", { type: "button", "data-test": "prev-page", disabled: !cursor, onclick: () => run("") }, "← First"),
        h("button", { type: "button", "data-test": "next-page", disabled: !g.next, onclick: () => run(g.next) }, "Next →"))];
  }

  function recallBody(r) {
    const rows = r.items.map((x, i) => h("tr", { "data-test": "recall-hit", "data-session": x.session, class: x.passed ? "passed" : "gated" },
      h("td", { class: "num" }, String(i + 1)),
      h("td", { class: "num", "data-test": "recall-score" }, x.score.toFixed(3)),
      h("td", { class: "num", title: `relevance ${x.relevance.toFixed(3)} against the gate's ${r.threshold}` }, x.relevance.toFixed(2), " ", x.passed ? badge("passes", "ok") : badge("gated", "muted-badge")),
      h("td", { "data-test": "recall-terms" }, x.matchedTerms.join(", ")),
      h("td", {}, h("a", { href: "#/dag/" + encodePath(x.agent || "", x.session) }, shortName(x.session)), " ",
        h("span", { class: "mono muted" }, x.kind === "summary" ? x.summaryId : "seq " + x.seq), x.neighbour ? badge("neighbour", "muted-badge") : null),
      h("td", {}, timeEl(x.timestamp)),
      h("td", { class: "snippet" }, x.snippet)));
    return [h("h2", {}, "Recall"),
      h("p", { class: "muted" }, "Prompt terms: ", r.terms.length ? r.terms.map((t) => h("code", {}, t)).reduce((a, b) => a.concat([" ", b]), []) : "none",
        ` · gate ${r.threshold}: nothing passes unless the best item's relevance reaches it; then items at half of it or more pass, and turns around a hit at the gate come in as neighbours (assemble renders only what passes)`),
      rows.length ? h("div", { class: "table-wrap" }, h("table", { class: "recall" },
        h("thead", {}, h("tr", {}, ["#", "Score", "Relevance", "Matched terms", "Session", "Time", "Text"].map((t) => h("th", {}, t)))),
        h("tbody", {}, rows))) : h("p", { class: "muted" }, "Nothing would be recalled (or recall is off: see Health).")];
  }

  // ---- health ----

  function viewHealth() {
    const gen = begin("health");
    const out = h("div", {});
    main.append(h("h1", {}, "Health"), out);
    const load = async () => {
      try {
        const x = await api("/api/health");
        if (!live(gen)) return;
        fill(out, healthBody(x));
        const d = x.doctor;
        if (d.state === "running") {
          setTimeout(() => { if (live(gen)) load(); }, 1000);
          return; // ready once the findings are shown
        }
        if (d.state === "error") throw new ApiError(500, "the checks failed: " + d.error);
        ready(gen);
      } catch (e) { failed(gen, e, load); }
    };
    load();
  }

  function healthBody(x) {
    const rc = x.recall || {};
    const d = x.doctor;
    const dl = (pairs) => h("dl", {}, pairs.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
    const cards = h("section", { class: "cards" },
      h("div", { class: "card" }, h("div", { class: "card-title" }, "Store"), dl([["backend", x.backend], ["where", h("span", { class: "mono" }, x.store)],
        ["format", String(x.format)], ["allocated on disk (du)", bytes(x.diskBytes)], ["conversations", num(x.conversations)], ["messages", num(x.messages)],
        ["raw JSON", bytes(x.bytes)], ["tokens stored", num(x.tokens)], ["summaries", num(x.summaries)],
        ["model summaries refused", x.refusedSummaries ? h("span", { "data-test": "health-refused" }, badge(num(x.refusedSummaries), "warn", { title: FALLBACK.refused })) : h("span", { "data-test": "health-refused" }, "0")]])),
      h("div", { class: "card" }, h("div", { class: "card-title" }, "Recall index"), dl([
        ["state", !rc.enabled ? badge("off", "muted-badge") : rc.error ? badge("error", "bad") : rc.rebuilding ? badge("rebuilding", "warn") : badge("ready", "ok")],
        ["size", x.backend === "postgres" ? "in the database" : bytes(x.indexBytes)], ["not yet searchable", num(rc.lag)],
        ["rebuilt so far", rc.rebuilding ? num(rc.rebuilt) : "–"], ["error", rc.error || "none"]])));
    let doctor;
    if (d.state === "running") {
      doctor = h("section", { class: "doctor" }, h("h2", {}, "Doctor"), h("p", { class: "muted" }, "Checking every conversation's DAG and summaries (started ", timeEl(d.startedAt), ")…"));
    } else if (d.state === "error") {
      doctor = h("section", { class: "doctor" }, h("h2", {}, "Doctor"), h("p", { class: "error" }, d.error));
    } else {
      const probs = d.check.problems || [];
      const c = d.census;
      const fb = c.fallbacks || [];
      doctor = h("section", { class: "doctor", "data-test": "health-doctor", "data-problems": String(probs.length) },
        h("h2", {}, "Doctor ", probs.length ? badge(probs.length + " problem" + (probs.length === 1 ? "" : "s"), "bad") : badge("no problems", "ok")),
        h("p", { class: "muted" }, `${num(d.check.conversations)} conversations checked (their DAGs: every message covered once, every summary present) in ${num(d.durationMs)} ms, `, timeEl(d.startedAt), ". ", h("code", {}, "lossless doctor --deep"), " also reads every message."),
        probs.length ? h("ul", { class: "problems" }, probs.map((p) => h("li", {}, h("span", { class: "mono" }, `${p.agent} / ${p.sessionId || p.conversation}`), ": ", p.problem))) : null,
        h("h2", {}, "Summaries made by a fallback ", c.fallback ? badge(num(c.fallback), "warn") : badge("none", "ok")),
        h("p", { class: "muted" }, `${num(c.summaries)} summaries: ` + Object.entries(c.byMethod).map(([m, n]) => `${num(n)} ${m || "(no method)"}`).join(", ") +
          ". A fallback summary was cut to size (truncate), made by an aggressive retry (the summarizer failed or wrote too much), or written by the extractive summarizer because the model's answer was no summary (refused: hover for why)."),
        fb.length ? h("div", { class: "table-wrap" }, h("table", {}, h("thead", {}, h("tr", {}, ["Session", "Summary", "Depth", "Method", "Tokens", "Made"].map((t) => h("th", {}, t)))),
          h("tbody", {}, fb.map((f) => h("tr", {}, h("td", {}, h("a", { class: "mono", href: "#/dag/" + encodePath(f.agent, f.session) }, f.agent + " / " + f.session)),
            h("td", { class: "mono" }, f.id), h("td", {}, depthBadge(f.depth)), h("td", {}, badge(f.method, "warn", { title: f.refused ? "refused: " + f.refused : FALLBACK[f.method] })),
            h("td", { class: "num" }, num(f.tokens)), h("td", {}, timeEl(f.createdAt))))))) : null,
        c.fallback > fb.length ? h("p", { class: "muted" }, `(the first ${fb.length} listed)`) : null);
    }
    return [cards, doctor];
  }

  // ---- routing ----

  function route() {
    const hash = location.hash.replace(/^#\/?/, "");
    const [path, query] = hash.split("?");
    const parts = path.split("/").map((p) => { try { return decodeURIComponent(p); } catch (e) { return p; } });
    const params = new URLSearchParams(query || "");
    switch (parts[0]) {
      case "context":
        if (parts.length >= 3) return viewContext(parts[1], parts.slice(2).join("/"), params.get("key") || "");
        break;
      case "dag":
        if (parts.length >= 3) return viewDag(parts[1], parts.slice(2).join("/"), 0, undefined, params.get("key") || "");
        break;
      case "search":
        return viewSearch(params);
      case "health":
        return viewHealth();
      case "sessions":
        return viewSessions();
      case "":
        break;
      default:
        break;
    }
    if (location.hash !== "#/sessions") location.replace("#/sessions"); // hashchange renders it
    else viewSessions();
  }

  // The header names the store (every view; the sessions view refreshes it).
  async function loadStore() {
    try { showStore(await api("/api/overview")); } catch (e) { if (e.status === 503) setTimeout(loadStore, 2000); }
  }

  window.addEventListener("hashchange", route);
  route();
  loadStore();
})();
