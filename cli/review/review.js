/*
 * cli/review/review.js: the review page. Everything the API returns came from a box, so it
 * is put into the page as text only (textContent, createElement); nothing from the data is
 * ever parsed as markup or run. The token from the page's URL goes with every request in
 * the X-Arborinth-Token header.
 */
'use strict';
(function () {
  const token = new URLSearchParams(location.search).get('t') || '';
  const state = { ws: null, forest: [], timeline: null, diffReq: null, checked: new Set() };
  const $ = (id) => document.getElementById(id);

  /* A JSON value the server sent: a string, or {"hex": ...} for bytes that are not UTF-8. */
  function txt(v) {
    if (v === null || v === undefined) return '';
    if (typeof v === 'object' && typeof v.hex === 'string')
      return v.hex.replace(/../g, (h) => {
        const b = parseInt(h, 16);
        return b >= 0x20 && b < 0x7f && b !== 0x5c ? String.fromCharCode(b) : '\\x' + h;
      });
    return String(v);
  }

  /* el('td', {class: 'no'}, child, 'text', ...): children are nodes or text, never markup. */
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') e.className = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else if (k.startsWith('data-')) e.dataset[k.slice(5)] = v;
      else e.setAttribute(k, v);
    }
    for (const k of kids) {
      if (k === null || k === undefined) continue;
      e.append(k instanceof Node ? k : document.createTextNode(txt(k)));
    }
    return e;
  }

  function status(msg, error) {
    $('status').textContent = msg || '';
    $('status').className = error ? 'error' : '';
  }

  async function api(path, body) {
    const opts = { headers: { 'X-Arborinth-Token': token }, credentials: 'same-origin' };
    if (body !== undefined) {
      opts.method = 'POST';
      opts.headers['Content-Type'] = 'application/json';
      opts.body = JSON.stringify(body);
    }
    const r = await fetch(path, opts);
    const j = await r.json().catch(() => ({ error: 'not JSON (' + r.status + ')' }));
    if (!r.ok) throw new Error(txt(j.error) || String(r.status));
    return j;
  }

  function q(obj) {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(obj))
      for (const x of [].concat(v)) if (x !== undefined && x !== null) p.append(k, x);
    return p.toString();
  }

  /* ---- the forest ---- */
  function renderForest() {
    const ul = $('forest');
    ul.replaceChildren();
    const byParent = new Map();
    const names = new Set(state.forest.map((w) => w.name));
    for (const w of state.forest) {
      const parent = w.forked_from && names.has(w.forked_from) ? w.forked_from : '';
      if (!byParent.has(parent)) byParent.set(parent, []);
      byParent.get(parent).push(w);
    }
    const add = (into, parent, depth) => {
      for (const w of byParent.get(parent) || []) {
        const box = el('input', { type: 'checkbox', title: 'compare' });
        box.checked = state.checked.has(w.name);
        box.addEventListener('change', () => {
          if (box.checked) state.checked.add(w.name);
          else state.checked.delete(w.name);
        });
        const d = w.diffstat;
        const li = el('li', { 'data-ws': w.name }, box,
          el('span', { class: 'ws' + (w.name === state.ws ? ' current' : ''), onclick: () => pick(w.name) }, w.name),
          el('span', { class: 'stat' },
            d ? ` ${d.files} files +${d.insertions} -${d.deletions}` : '',
            w.comments ? ` · ${w.comments} comments` : '',
            w.forked_from ? ` · from ${w.forked_from}` : ''));
        const sub = el('ul');
        add(sub, w.name, depth + 1);
        if (sub.childElementCount) li.append(sub);
        into.append(li);
      }
    };
    add(ul, '', 0);
  }

  async function loadForest() {
    const f = await api('/api/forest');
    state.forest = f.workspaces;
    $('root').textContent = txt(f.root);
    if (state.checked.size === 0) for (const n of f.selected) state.checked.add(n);
    renderForest();
    return f;
  }

  /* ---- the timeline ---- */
  function when(ns) {
    return ns ? new Date(ns / 1e6).toISOString().replace('T', ' ').slice(0, 19) : '';
  }

  function renderTimeline(t) {
    const ol = $('timeline');
    ol.replaceChildren();
    for (const s of t.sessions) {
      const argv = (s.argv || []).map(txt).join(' ');
      const failed = s.exit !== null && s.exit !== 0;
      const files = el('ul', { class: 'files' }, ...s.files.map((f) => el('li', { class: 'code' }, f)));
      const reqs = el('ul', { class: 'requests' }, ...s.requests.map((r) =>
        el('li', { class: 'code' }, `${txt(r.method)} ${txt(r.host)} ${txt(r.decision)} ${r.status >= 0 ? r.status : ''}`)));
      const li = el('li', { class: 'session' + (failed ? ' failed' : ''), 'data-session': String(s.id) },
        el('div', {}, s.id ? `session ${s.id} ` : 'outside a session ', el('span', { class: 'argv' }, argv)),
        el('div', { class: 'stat' }, when(s.started_ns),
          s.exit !== null ? ` · exit ${s.exit}` : (s.id ? ' · running or lost' : ''),
          s.duration_ms !== null ? ` · ${s.duration_ms} ms` : '',
          ` · ${s.writes} writes`, s.requests.length ? ` · ${s.requests.length} requests (${s.refused} refused)` : ''),
        files, reqs);
      if (s.id) li.append(el('button', { type: 'button', onclick: () => showDiff({ ws: state.ws, session: s.id }) }, 'Diff of this session'));
      ol.append(li);
    }
    const sel = $('rewind-to');
    sel.replaceChildren(el('option', { value: 'base' }, 'base'),
      ...t.checkpoints.map((c) => el('option', { value: String(c.seq) }, `#${c.seq} ${c.kind} ${txt(c.message)}`)));
  }

  /* ---- diffs, side by side ---- */
  function pairRows(h) {
    const rows = [];
    let dels = [], adds = [];
    const flush = () => {
      for (let i = 0; i < Math.max(dels.length, adds.length); i++) rows.push([dels[i] || null, adds[i] || null]);
      dels = []; adds = [];
    };
    for (const l of h.lines) {
      if (l.t === '-') dels.push(l);
      else if (l.t === '+') adds.push(l);
      else { flush(); rows.push([l, l]); }
    }
    flush();
    return rows;
  }

  function hunkText(h) {
    return h.lines.map((l) => l.t + txt(l.s)).join('\n');
  }

  /* A click on a line number opens the form; a shift-click in the same file and side makes
     the comment cover the lines from the first click to this one. */
  function commentForm(file, h, side, line, anchor, shift) {
    const old = document.querySelector('.comment-form');
    const prev = state.sel;
    let first = line, last = line;
    if (shift && prev && prev.file === file && prev.side === side) {
      first = Math.min(prev.line, line);
      last = Math.max(prev.line, line);
    }
    state.sel = { file, side, line: shift && prev ? prev.line : line };
    if (old) old.remove();
    const ta = el('textarea', { 'aria-label': 'comment' });
    const path = txt(side === 'old' ? (file.old ?? file.new) : (file.new ?? file.old));
    const save = el('button', { type: 'button', class: 'save' }, 'Comment');
    const row = el('tr', { class: 'comment-form' }, el('td', { colspan: '4' },
      el('div', {}, `${path}:${first === last ? first : first + '-' + last} (${side})`), ta, save));
    save.addEventListener('click', async () => {
      try {
        await api('/api/comments', { ws: state.ws, path, side, line_start: first, line_end: last,
          hunk: hunkText(h), text: ta.value, from: state.diffReq.from || '', to: state.diffReq.to || '' });
        row.remove();
        status('comment saved');
        await loadComments();
        await loadForest();
      } catch (e) { status(e.message, true); }
    });
    anchor.after(row);
    ta.focus();
  }

  function renderFile(f) {
    const name = f.old && f.new && txt(f.old) !== txt(f.new) ? `${txt(f.old)} → ${txt(f.new)}` : txt(f.new ?? f.old);
    const table = el('table', { class: 'sbs' }, el('colgroup', {}, el('col', { class: 'nocol' }),
      el('col'), el('col', { class: 'nocol' }), el('col')));
    const box = el('div', { class: 'file' }, el('h3', {}, `${f.status} ${name}`));
    if (f.binary) box.append(el('div', {}, 'binary file'));
    for (const h of f.hunks) {
      table.append(el('tr', {}, el('td', { class: 'hunk', colspan: '4' }, txt(h.header))));
      for (const [a, b] of pairRows(h)) {
        const tr = el('tr');
        const cell = (l, side) => {
          const no = l ? (side === 'old' ? l.o : l.n) : null;
          const cls = !l ? '' : l.t === '-' ? 'del' : l.t === '+' ? 'add' : '';
          const noTd = el('td', { class: 'no', title: 'comment on this line' }, no === null ? '' : String(no));
          if (no !== null) noTd.addEventListener('click', (ev) => commentForm(f, h, side, no, tr, ev.shiftKey));
          tr.append(noTd, el('td', { class: cls }, l ? txt(l.s) : ''));
        };
        cell(a, 'old');
        cell(b, 'new');
        table.append(tr);
      }
    }
    box.append(table);
    return box;
  }

  async function showDiff(req) {
    state.diffReq = req;
    tab('diff');
    $('diff').replaceChildren();
    $('diff-title').textContent = req.session ? `session ${req.session} of ${req.ws}`
      : req.other ? `${req.ws} → ${req.other} (their views now)` : `${req.ws}: ${req.from || 'base'} → ${req.to || 'view'}`;
    const against = $('diff-against');
    against.replaceChildren(el('option', { value: '' }, 'its base'),
      ...state.forest.filter((w) => w.name !== req.ws).map((w) => el('option', { value: w.name }, w.name)));
    against.value = req.other || '';
    try {
      const d = await api('/api/diff?' + q(req));
      if (d.error) throw new Error(txt(d.error));
      if (!d.files.length) $('diff').append(el('p', {}, 'no changes'));
      for (const f of d.files) $('diff').append(renderFile(f));
      state.diffReq.from = d.from; state.diffReq.to = d.to;
    } catch (e) { status(e.message, true); }
  }

  /* ---- the comparison ---- */
  async function showCompare() {
    tab('compare');
    const names = [...state.checked];
    const box = $('compare');
    box.replaceChildren();
    if (names.length < 2) { box.append(el('p', {}, 'Check two or more workspaces in the list.')); return; }
    try {
      const c = await api('/api/compare?' + q({ ws: names }));
      if (c.unavailable) { box.append(el('p', { id: 'compare-unavailable' }, txt(c.unavailable))); return; }
      const t = el('table', { class: 'cmp' }, el('tr', {}, ...['workspace', 'files', '+', '-', 'sessions', 'tests', 'uncommitted'].map((h) => el('th', {}, h))));
      for (const w of c.workspaces || []) {
        const files = w.files || [];
        const tests = (w.tests || []).map((x) => `${txt(x.command)}: ${x.exit === 0 ? 'pass' : 'fail'}`).join('; ');
        t.append(el('tr', {}, el('td', {}, txt(w.name)), el('td', {}, String(files.length)),
          el('td', {}, String(files.reduce((s, f) => s + (f.added || 0), 0))),
          el('td', {}, String(files.reduce((s, f) => s + (f.deleted || 0), 0))),
          el('td', {}, String((w.sessions || []).length)), el('td', {}, tests),
          el('td', {}, String((w.uncommitted || []).length))));
      }
      box.append(t, el('h3', {}, 'Files more than one changed'));
      const ul = el('ul');
      for (const o of c.overlaps || [])
        ul.append(el('li', { class: o.conflict ? 'conflict' : '' }, `${txt(o.path)}: ${(o.workspaces || []).map(txt).join(', ')}${o.conflict ? ' (conflict)' : ''}`));
      box.append(ul);
    } catch (e) { status(e.message, true); }
  }

  /* ---- comments ---- */
  async function loadComments() {
    if (!state.ws) return;
    const c = await api('/api/comments?' + q({ ws: state.ws }));
    const ul = $('comments');
    ul.replaceChildren();
    for (const x of c.comments)
      ul.append(el('li', { class: 'comment' }, `${txt(x.path)}:${x.line_start} (${x.side}) `,
        el('span', { class: 'text' }, txt(x.text)), ' ',
        el('button', { type: 'button', onclick: async () => {
          try { await api('/api/comments/delete', { ws: state.ws, id: x.id }); await loadComments(); } catch (e) { status(e.message, true); }
        } }, 'remove')));
    $('message').textContent = txt(c.message);
  }

  /* ---- actions ---- */
  async function act(action) {
    if (!state.ws) return;
    const body = { action, ws: state.ws };
    if (action === 'rewind') body.to = $('rewind-to').value;
    try {
      const r = await api('/api/action', body);
      status(txt(r.message));
      await loadForest();
      if (action !== 'delete') await pick(state.ws);
    } catch (e) { status(e.message, true); }
  }

  function tab(name) {
    for (const p of document.querySelectorAll('.pane')) p.hidden = p.id !== 'pane-' + name;
    for (const b of document.querySelectorAll('#tabs button')) b.classList.toggle('on', b.dataset.tab === name);
  }

  async function pick(name) {
    state.ws = name;
    $('ws-title').textContent = name;
    $('actions').hidden = false;
    renderForest();
    try {
      state.timeline = await api('/api/timeline?' + q({ ws: name }));
      renderTimeline(state.timeline);
      tab('timeline');
      await loadComments();
    } catch (e) { status(e.message, true); }
  }

  async function start() {
    for (const b of document.querySelectorAll('#tabs button'))
      b.addEventListener('click', () => {
        const t = b.dataset.tab;
        if (t === 'diff' && state.ws) showDiff({ ws: state.ws });
        else if (t === 'compare') showCompare();
        else tab(t);
      });
    for (const b of document.querySelectorAll('#actions button'))
      b.addEventListener('click', () => act(b.dataset.action));
    $('compare-btn').addEventListener('click', showCompare);
    $('diff-against').addEventListener('change', () => {
      const other = $('diff-against').value;
      showDiff(other ? { ws: state.ws, other } : { ws: state.ws });
    });
    try {
      const f = await loadForest();
      const first = f.selected[0] || (f.workspaces[0] && f.workspaces[0].name);
      if (first) await pick(first);
      document.body.dataset.ready = '1';
    } catch (e) { status(e.message, true); document.body.dataset.ready = 'error'; }
  }
  /* For tests and scripts driving the page: the same functions the buttons call. */
  window.arborinthReview = { pick, showDiff, showCompare, act, loadComments, state };
  start();
})();
