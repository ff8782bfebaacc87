// tarn's web console: a few pages over the JSON API under /v1 (docs/http-api.md), routed by the
// URL's hash (#/topics/NAME), drawn with plain DOM calls. No framework, no build step.
'use strict';

const main = document.getElementById('main');
let refreshTimer = null;

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'class') e.className = v;
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

// Redraws the page after `ms`, unless the user is typing in one of its fields (then later).
function refreshLater(ms) {
  refreshTimer = setTimeout(() => {
    const a = document.activeElement;
    if (a && main.contains(a) && /^(INPUT|SELECT|TEXTAREA)$/.test(a.tagName)) refreshLater(ms);
    else route();
  }, ms);
}

function showError(message) {
  const box = document.getElementById('error');
  box.textContent = message;
  box.hidden = false;
  setTimeout(() => { box.hidden = true; }, 6000);
}

async function api(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch('/v1' + path, init);
  let data = null;
  try { data = await res.json(); } catch (e) { data = null; }
  if (!res.ok) throw new Error((data && data.error) || (method + ' ' + path + ': ' + res.status));
  return data;
}

function bytes(n) {
  if (n < 1024) return Math.round(n) + ' B';
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n, i = -1;
  do { v /= 1024; i++; } while (v >= 1024 && i < units.length - 1);
  return v.toFixed(1) + ' ' + units[i];
}
function perSec(n) { return n === undefined ? '–' : (n < 10 ? n.toFixed(2) : Math.round(n)) + '/s'; }
function num(v) { return el('td', { class: 'num' }, v); }
function table(id, headers, rows) {
  return el('table', { id },
    el('thead', {}, el('tr', {}, headers.map((h) => el('th', {}, h)))),
    el('tbody', {}, rows));
}
function enc(s) { return encodeURIComponent(s); }

// ---- Overview ---------------------------------------------------------------------------------

// The live dashboard's charts, drawn by uPlot (vendor/uplot, MIT). Destroyed before a page is
// drawn again: uPlot listens on the window for resizes, so a forgotten chart would leak.
let charts = [];
function destroyCharts() {
  for (const c of charts) c.destroy();
  charts = [];
}

// A time series chart of `lines` [[label, color, values]] over `times` (ms since the epoch).
function timeChart(target, times, lines, format) {
  const opts = {
    width: Math.max(320, main.clientWidth - 40), height: 180,
    scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(1, max)] } },
    axes: [{}, { size: 70, values: (u, ticks) => ticks.map(format) }],
    series: [{}, ...lines.map(([label, stroke]) => ({ label, stroke, width: 2, value: (u, v) => (v === null ? '–' : format(v)) }))],
    legend: { live: false },
    cursor: { drag: { x: false, y: false } },
  };
  charts.push(new uPlot(opts, [times.map((t) => t / 1000), ...lines.map(([, , values]) => values)], target));
}

// Distinct, readable on white; an API past the palette's end reuses a colour with its own label.
const palette = ['#0b6bcb', '#2e7d32', '#c62828', '#6a1b9a', '#ef6c00', '#00838f', '#5d4037', '#ad1457'];

function drawCharts(bytesTarget, requestsTarget, series) {
  if (series.length < 2) return;
  const times = series.map((p) => p.at_ms);
  timeChart(bytesTarget, times, [
    ['bytes in/s', palette[0], series.map((p) => p.bytes_in_per_sec)],
    ['bytes out/s', palette[1], series.map((p) => p.bytes_out_per_sec)]], (v) => bytes(v) + '/s');
  // Every API that answered a request in the last two minutes, busiest first.
  const totals = {};
  for (const p of series) {
    for (const [name, v] of Object.entries(p.requests_per_sec_by_api || {})) totals[name] = (totals[name] || 0) + v;
  }
  const apis = Object.keys(totals).sort((a, b) => totals[b] - totals[a]);
  timeChart(requestsTarget, times, apis.map((name, i) => [name, palette[i % palette.length],
    series.map((p) => (p.requests_per_sec_by_api || {})[name] || 0)]), perSec);
}

async function overview() {
  const [c, r] = await Promise.all([api('GET', '/cluster'), api('GET', '/rates')]);
  document.getElementById('read-only').hidden = !c.read_only;
  const card = (k, v, id) => el('div', { class: 'card', id }, el('div', { class: 'v' }, v), el('div', { class: 'k' }, k));
  const bytesChart = el('div', { id: 'chart-bytes', class: 'chart' });
  const requestsChart = el('div', { id: 'chart-requests', class: 'chart' });
  main.replaceChildren(
    el('h1', {}, 'Broker ' + c.node_id + ' ', el('span', { class: 'muted' }, c.ready ? 'ready' : 'not ready')),
    el('div', { class: 'cards' },
      card('topics', c.topics, 'card-topics'), card('partitions', c.partitions),
      card('log size', bytes(c.log_size_bytes)), card('connections', c.connections),
      card('groups', c.groups_with_offsets), card('bytes in', bytes(c.bytes_in_per_sec) + '/s'),
      card('bytes out', bytes(c.bytes_out_per_sec) + '/s'), card('messages in', perSec(c.messages_in_per_sec))),
    el('h2', {}, 'Throughput, last two minutes'), bytesChart,
    el('h2', {}, 'Requests per second by API, last two minutes'), requestsChart,
    el('p', { class: 'muted' }, 'Charts drawn by uPlot 1.6.32 (', el('a', { href: '/console/vendor/uplot/LICENSE' }, 'MIT licence'), ').'),
    el('h2', {}, 'Requests per second by API, last 10 s'),
    table('request-rates', ['API', 'requests/s'],
      Object.entries(r.requests_per_sec).filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1])
        .map(([api, v]) => el('tr', { 'data-api': api }, el('td', {}, api), num(perSec(v))))),
    el('h2', {}, 'Broker'),
    table('broker-info', ['', ''], [
      el('tr', {}, el('td', {}, 'version'), el('td', {}, c.version + ' (Kafka ' + c.kafka_version + ')')),
      el('tr', {}, el('td', {}, 'uptime'), el('td', {}, Math.round(c.uptime_ms / 1000) + ' s')),
      el('tr', {}, el('td', {}, 'listeners'), el('td', {}, c.listeners.map((l) => l.name + '://' + l.host + ':' + l.port).join(', '))),
      el('tr', {}, el('td', {}, 'log dir'), el('td', {}, c.log_dir.path + ' (' + bytes(c.log_dir.free_bytes) + ' free of ' + bytes(c.log_dir.total_bytes) + ')')),
    ]));
  destroyCharts();
  drawCharts(bytesChart, requestsChart, r.series);
  refreshLater(2000);
}

// ---- Topics -----------------------------------------------------------------------------------

function parseConfigs(text) {
  const out = {};
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (!t) continue;
    const eq = t.indexOf('=');
    if (eq <= 0) throw new Error('configs: expected key=value, got "' + t + '"');
    out[t.slice(0, eq).trim()] = t.slice(eq + 1).trim();
  }
  return out;
}

async function topics() {
  const { topics } = await api('GET', '/topics');
  const rows = topics.map((t) => el('tr', { 'data-topic': t.name },
    el('td', {}, el('a', { href: '#/topics/' + enc(t.name) }, t.name), t.internal ? el('span', { class: 'muted' }, ' internal') : null),
    num(t.partitions), num(t.messages), num(bytes(t.size_bytes)),
    num(perSec(t.messages_in_per_sec)), num(bytes(t.bytes_in_per_sec || 0) + '/s'), num(bytes(t.bytes_out_per_sec || 0) + '/s')));
  const form = el('form', { id: 'create-topic', class: 'inline', onsubmit: async (ev) => {
    ev.preventDefault();
    try {
      const f = ev.target;
      const body = { name: f.elements.name.value.trim(), partitions: parseInt(f.elements.partitions.value, 10),
                     configs: parseConfigs(f.elements.configs.value) };
      await api('POST', '/topics', body);
      location.hash = '#/topics/' + enc(body.name);
    } catch (e) { showError(e.message); }
  } },
    el('label', {}, 'name', el('input', { name: 'name', id: 'new-topic-name', required: true, pattern: '[a-zA-Z0-9._\\-]+' })),
    el('label', {}, 'partitions', el('input', { name: 'partitions', id: 'new-topic-partitions', type: 'number', min: 1, value: 1 })),
    el('label', {}, 'configs (key=value a line)', el('textarea', { name: 'configs', id: 'new-topic-configs', rows: 1, cols: 30 })),
    el('button', { type: 'submit', id: 'create-topic-submit' }, 'Create topic'));
  main.replaceChildren(el('h1', {}, 'Topics'),
    table('topics', ['name', 'partitions', 'messages', 'size', 'msg in', 'bytes in', 'bytes out'], rows),
    el('h2', {}, 'New topic'), form);
}

// JSON text indented two spaces a level, or null when `text` is not JSON. JSON.parse only checks
// it: its numbers are doubles, so re-serialising would round an integer past 2^53 (an id, an
// offset) and show a value that is not the one stored. The indentation is added to the text as
// it is, token by token.
function prettyJson(text) {
  try { JSON.parse(text); } catch (e) { return null; }
  let out = '', depth = 0;
  const newline = () => '\n' + '  '.repeat(depth);
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j;
    } else if (c === '{' || c === '[') {
      let j = i + 1;
      while (' \t\r\n'.includes(text[j])) j++;
      if (text[j] === (c === '{' ? '}' : ']')) { out += c + text[j]; i = j; } // {} and [] stay whole
      else { depth++; out += c + newline(); }
    } else if (c === '}' || c === ']') { depth--; out += newline() + c; }
    else if (c === ',') out += ',' + newline();
    else if (c === ':') out += ': ';
    else if (!' \t\r\n'.includes(c)) out += c;
  }
  return out;
}

// A key or value cell's content: null, the text as the API sent it, or in the JSON view the
// text pretty-printed (or as text with a note when it is not JSON).
function shown(v, asJson) {
  if (v === null) return el('span', { class: 'muted' }, 'null');
  if (!asJson) return v;
  const pretty = prettyJson(v);
  if (pretty !== null) return el('span', { class: 'json' }, pretty);
  return [el('span', { class: 'not-json' }, v), el('span', { class: 'muted note' }, ' (not JSON; shown as text)')];
}

async function browse(name, form, out) {
  const p = form.elements.partition.value;
  const view = form.elements.encoding.value;
  const asJson = view === 'json';
  // The JSON view is drawn here from the text encoding.
  const q = new URLSearchParams({ offset: form.elements.offset.value || '0', limit: form.elements.limit.value || '50',
                                  encoding: asJson ? 'text' : view });
  const from = form.elements.time.value.trim();
  if (from) {
    const ms = /^\d+$/.test(from) ? Number(from) : Date.parse(from);
    if (Number.isNaN(ms)) throw new Error('from time: milliseconds or a date such as 2026-01-31T12:00:00Z');
    q.set('timestamp', ms);
  }
  const r = await api('GET', '/topics/' + enc(name) + '/partitions/' + p + '/records?' + q);
  const rows = r.records.map((m) => el('tr', { class: 'record', 'data-offset': m.offset },
    num(m.offset), el('td', {}, new Date(m.timestamp).toISOString()),
    el('td', { class: 'data key' }, shown(m.key, asJson)), el('td', { class: 'data value' }, shown(m.value, asJson)),
    el('td', { class: 'data' }, m.headers.map((h) => h.key + '=' + (h.value === null ? 'null' : h.value)).join('\n'))));
  out.replaceChildren(
    el('p', { class: 'muted', id: 'records-summary' }, r.records.length + ' record(s); partition holds offsets ' +
       r.log_start_offset + ' to ' + (r.high_watermark - 1) + '; next offset ' + r.next_offset),
    table('records', ['offset', 'timestamp', 'key', 'value', 'headers'], rows),
    // replaceChildren would show a null as the text "null": spread nothing instead.
    ...(r.next_offset < r.high_watermark ? [el('button', { id: 'browse-next', onclick: () => {
      form.elements.offset.value = r.next_offset;
      form.elements.time.value = '';
      browse(name, form, out).catch((e) => showError(e.message));
    } }, 'Next page')] : []));
}

async function topic(name) {
  const t = await api('GET', '/topics/' + enc(name));
  const parts = t.partition_detail.map((p) => el('tr', {}, num(p.partition), num(p.log_start_offset),
    num(p.log_end_offset), num(p.high_watermark), num(bytes(p.size_bytes)),
    el('td', { class: 'segments' }, el('details', {}, el('summary', {}, p.segments + ' segment(s)'),
      table('segments-' + p.partition, ['file', 'base offset', 'size'], p.segment_files.map((f) =>
        el('tr', { 'data-segment': f.name }, el('td', { class: 'data' }, f.name), num(f.base_offset), num(bytes(f.size_bytes))))))),
    el('td', {}, el('a', { href: '#/topics/' + enc(name) + '/batches/' + p.partition + '/' + p.log_start_offset,
                           class: 'inspect' }, 'inspect batches'))));
  const configs = t.configs.map((c) => el('tr', { 'data-config': c.name }, el('td', {}, c.name),
    el('td', { class: 'data' }, c.value === null ? '(sensitive)' : c.value), el('td', { class: 'muted' }, c.source)));
  const out = el('div', { id: 'records-out' });
  const form = el('form', { id: 'browse', class: 'inline', onsubmit: (ev) => {
    ev.preventDefault();
    browse(name, ev.target, out).catch((e) => showError(e.message));
  } },
    el('label', {}, 'partition', el('select', { name: 'partition', id: 'browse-partition' },
      t.partition_detail.map((p) => el('option', { value: p.partition }, p.partition)))),
    el('label', {}, 'from offset', el('input', { name: 'offset', id: 'browse-offset', type: 'number', min: 0,
      value: t.partition_detail.length ? t.partition_detail[0].log_start_offset : 0 })),
    el('label', {}, 'or from time (ISO or ms)', el('input', { name: 'time', id: 'browse-time', size: 24 })),
    el('label', {}, 'records', el('input', { name: 'limit', id: 'browse-limit', type: 'number', min: 1, max: 1000, value: 50 })),
    el('label', {}, 'show as', el('select', { name: 'encoding', id: 'browse-encoding' },
      el('option', { value: 'text' }, 'text'), el('option', { value: 'json' }, 'JSON (pretty)'),
      el('option', { value: 'hex' }, 'hex'), el('option', { value: 'base64' }, 'base64'))),
    el('button', { type: 'submit', id: 'browse-load' }, 'Load'));
  const alter = el('form', { id: 'alter-config', class: 'inline', onsubmit: async (ev) => {
    ev.preventDefault();
    const f = ev.target;
    const value = f.elements.value.value.trim();
    try {
      await api('PATCH', '/topics/' + enc(name) + '/configs', { configs: { [f.elements.key.value.trim()]: value === '' ? null : value } });
      route();
    } catch (e) { showError(e.message); }
  } },
    el('label', {}, 'config', el('input', { name: 'key', id: 'alter-config-key', required: true })),
    el('label', {}, 'value (empty: back to the default)', el('input', { name: 'value', id: 'alter-config-value' })),
    el('button', { type: 'submit' }, 'Set'));
  const produced = el('span', { class: 'muted', id: 'produce-result' });
  const produce = el('form', { id: 'produce', class: 'inline', onsubmit: async (ev) => {
    ev.preventDefault();
    const f = ev.target;
    try {
      const headers = Object.entries(parseConfigs(f.elements.headers.value)).map(([key, value]) => ({ key, value }));
      const body = { key: f.elements.key.value === '' ? null : f.elements.key.value,
                     value: f.elements.value.value, headers };
      const r = await api('POST', '/topics/' + enc(name) + '/partitions/' + f.elements.partition.value + '/records', body);
      produced.textContent = 'produced at offset ' + r.offset;
      f.elements.value.value = '';
    } catch (e) { showError(e.message); }
  } },
    el('label', {}, 'partition', el('select', { name: 'partition', id: 'produce-partition' },
      t.partition_detail.map((p) => el('option', { value: p.partition }, p.partition)))),
    el('label', {}, 'key (empty: null)', el('input', { name: 'key', id: 'produce-key' })),
    el('label', {}, 'value', el('textarea', { name: 'value', id: 'produce-value', rows: 1, cols: 40 })),
    el('label', {}, 'headers (key=value a line)', el('textarea', { name: 'headers', id: 'produce-headers', rows: 1, cols: 24 })),
    el('button', { type: 'submit', id: 'produce-submit', disabled: t.internal }, 'Produce'), produced);
  const del = el('button', { class: 'danger', id: 'delete-topic', onclick: async () => {
    if (!confirm('Delete topic ' + name + ' and all its records?')) return;
    try { await api('DELETE', '/topics/' + enc(name)); location.hash = '#/topics'; } catch (e) { showError(e.message); }
  } }, 'Delete topic');
  main.replaceChildren(
    el('h1', { id: 'topic-name' }, name),
    el('p', { class: 'muted' }, 'id ' + t.topic_id + ' · ' + t.partitions + ' partition(s) · ' + t.messages +
       ' message(s) · ' + bytes(t.size_bytes) + ' · in ' + perSec(t.messages_in_per_sec) + ' · ', del),
    el('h2', {}, 'Partitions'),
    table('partitions', ['partition', 'start offset', 'end offset', 'high watermark', 'size', 'segments', ''], parts),
    el('h2', {}, 'Messages'), form, out,
    el('h2', {}, 'Produce a message'), produce,
    el('h2', {}, 'Configs'), alter, table('configs', ['name', 'value', 'source'], configs));
  await browse(name, form, out);
}

// ---- Batch inspector --------------------------------------------------------------------------

// The record batch v2 header (docs/record-batch.md): name, first byte, length.
const batchFields = [
  ['baseOffset', 0, 8, 'base_offset'], ['batchLength', 8, 4, 'batch_length'],
  ['partitionLeaderEpoch', 12, 4, 'partition_leader_epoch'], ['magic', 16, 1, 'magic'],
  ['crc', 17, 4, 'crc'], ['attributes', 21, 2, 'attributes'],
  ['lastOffsetDelta', 23, 4, 'last_offset_delta'], ['baseTimestamp', 27, 8, 'base_timestamp'],
  ['maxTimestamp', 35, 8, 'max_timestamp'], ['producerId', 43, 8, 'producer_id'],
  ['producerEpoch', 51, 2, 'producer_epoch'], ['baseSequence', 53, 4, 'base_sequence'],
  ['recordsCount', 57, 4, 'records_count'], ['records', 61, Infinity, null]];

// A zigzag varint at `at` (record fields, docs/record-batch.md): [value, its length in bytes].
// Doubles, not BigInts: exact for the lengths it is used for, and a timestamp delta's value comes
// from the API anyway.
function varintAt(u8, at) {
  let raw = 0, scale = 1, i = at;
  for (;;) {
    const b = u8[i++];
    raw += (b & 0x7f) * scale;
    scale *= 128;
    if (!(b & 0x80) || i - at >= 10 || i >= u8.length) break;
  }
  return [raw % 2 === 0 ? raw / 2 : -(raw + 1) / 2, i - at];
}

// Where each record's fields lie in an uncompressed batch: for record i, [name, first byte,
// length] of length, attributes, timestampDelta, offsetDelta, keyLength, key, valueLength, value,
// headerCount and headers (its header keys and values together).
const recordFieldNames = ['length', 'attributes', 'timestampDelta', 'offsetDelta', 'keyLength', 'key',
  'valueLength', 'value', 'headerCount', 'headers'];
function recordLayout(u8, count) {
  const out = [];
  let at = 61;
  for (let r = 0; r < count && at < u8.length; r++) {
    const f = [];
    const mark = (name, len) => { f.push([name, at, len]); at += len; };
    const [len, n] = varintAt(u8, at);
    mark('length', n);
    const end = at + len;
    mark('attributes', 1);
    mark('timestampDelta', varintAt(u8, at)[1]);
    mark('offsetDelta', varintAt(u8, at)[1]);
    const [keyLength, kn] = varintAt(u8, at);
    mark('keyLength', kn);
    if (keyLength > 0) mark('key', keyLength);
    const [valueLength, vn] = varintAt(u8, at);
    mark('valueLength', vn);
    if (valueLength > 0) mark('value', valueLength);
    mark('headerCount', varintAt(u8, at)[1]);
    if (end > at) mark('headers', end - at);
    at = end;
    out.push(f);
  }
  return out;
}

// Bytes a page of the hex dump shows: a whole batch (the API sends up to 1 MiB of it) is paged
// rather than cut, and a page stays cheap to draw.
const hexPageBytes = 2048;

function inspectBatch(b) {
  // Decoded in place: a 1 MiB batch would otherwise be a million two-letter strings first.
  const u8 = new Uint8Array(b.hex.length >> 1);
  for (let i = 0; i < u8.length; i++) u8[i] = parseInt(b.hex.substr(2 * i, 2), 16);
  // The field of every byte: the header's, then (uncompressed batches: the bytes are the records)
  // each record's, as 'r<i>.<field>'.
  const fieldOf = new Array(u8.length).fill('');
  const firstByte = {};
  const setField = (name, at, len) => {
    firstByte[name] = at;
    for (let i = at; i < Math.min(at + len, u8.length); i++) fieldOf[i] = name;
  };
  for (const [name, at, len] of batchFields) setField(name, at, len === Infinity ? u8.length - at : len);
  const layout = b.compression === 'none' ? recordLayout(u8, b.records.length) : [];
  layout.forEach((fields, i) => { for (const [name, at, len] of fields) setField('r' + i + '.' + name, at, len); });

  let lit = null;
  let page = 0;
  const pages = Math.max(1, Math.ceil(u8.length / hexPageBytes));
  const dump = el('pre', { class: 'hex', id: 'batch-hex' });
  const range = el('span', { id: 'batch-hex-range', class: 'muted' });
  const prev = el('button', { id: 'batch-hex-prev', type: 'button', onclick: () => showPage(page - 1) }, '‹ bytes');
  const next = el('button', { id: 'batch-hex-next', type: 'button', onclick: () => showPage(page + 1) }, 'bytes ›');
  const hexNote = b.hex_truncated ? el('p', { class: 'muted' }, 'the first ' + bytes(u8.length) + ' of the batch') : null;
  const highlight = (name) => {
    lit = name;
    for (const e of dump.querySelectorAll('.byte')) e.classList.toggle('hl', e.dataset.field === name);
    for (const e of root.querySelectorAll('tr[data-field], td[data-field]')) e.classList.toggle('hl', e.dataset.field === name);
  };
  function showPage(p) {
    page = Math.min(Math.max(p, 0), pages - 1);
    const from = page * hexPageBytes;
    const to = Math.min(from + hexPageBytes, u8.length);
    const spans = [];
    for (let i = from; i < to; i++) {
      const span = el('span', { class: 'byte' + (fieldOf[i] && fieldOf[i] === lit ? ' hl' : ''), 'data-field': fieldOf[i] },
        u8[i].toString(16).padStart(2, '0') + ' ');
      span.addEventListener('mouseenter', () => highlight(span.dataset.field));
      spans.push(span);
    }
    dump.replaceChildren(...spans);
    range.textContent = 'bytes ' + from + '–' + (to - 1) + ' of ' + u8.length;
    prev.disabled = page === 0;
    next.disabled = page === pages - 1;
  }
  // A field chosen in a table: lit, its page shown when its bytes are on another.
  const choose = (name) => {
    if (firstByte[name] !== undefined && Math.floor(firstByte[name] / hexPageBytes) !== page) {
      lit = name;
      showPage(Math.floor(firstByte[name] / hexPageBytes));
    }
    highlight(name);
  };

  const value = (key) => {
    if (key === 'crc') return b.crc + (b.crc_valid ? ' ✓ verifies' : ' ✗ does not verify');
    if (key === 'attributes') {
      return b.attributes + ' (' + [b.compression, b.timestamp_type, b.transactional ? 'transactional' : null,
        b.control ? 'control' : null].filter(Boolean).join(', ') + ')';
    }
    return b[key];
  };
  const rows = batchFields.map(([name, at, len, key]) => el('tr', { 'data-field': name, tabindex: 0 },
    el('td', {}, name), num(at + (len === Infinity ? '–' : '..' + (at + len - 1))),
    el('td', { class: 'data' }, key ? value(key) : b.records.length + ' record(s) ' + (b.compression === 'none' ? '' : '(' + b.compression + ')'))));
  const fieldTable = table('batch-fields', ['field', 'bytes', 'value'], rows);
  // Each record's fields; in an uncompressed batch each cell lights its bytes (in a compressed
  // one the records are inside the compressed payload, not in the bytes shown).
  const cellOf = (i, name, text) => el('td', {
    class: 'num', 'data-field': layout.length ? 'r' + i + '.' + name : null, tabindex: layout.length ? 0 : null,
  }, text);
  const records = table('batch-records', ['offset', 'length', 'attributes', 'timestampDelta', 'offsetDelta', 'keyLength', 'valueLength', 'headerCount'],
    b.records.map((r, i) => el('tr', { 'data-record': i }, num(b.base_offset + r.offset_delta), cellOf(i, 'length', r.size_bytes),
      cellOf(i, 'attributes', r.attributes), cellOf(i, 'timestampDelta', r.timestamp_delta), cellOf(i, 'offsetDelta', r.offset_delta),
      cellOf(i, 'keyLength', r.key_length), cellOf(i, 'valueLength', r.value_length), cellOf(i, 'headerCount', r.header_count))));
  const root = el('div', { class: 'inspector' },
    el('div', { class: 'cols' }, fieldTable, el('div', {}, el('div', { class: 'hex-nav' }, prev, ' ', range, ' ', next), dump, hexNote)),
    el('h2', {}, 'Records'),
    layout.length ? null : el('p', { class: 'muted' }, 'compressed: the records are inside the ' + b.compression + ' payload, so their fields are not lit in the bytes'),
    records);
  for (const e of root.querySelectorAll('tr[data-field], td[data-field]')) {
    e.addEventListener('mouseenter', () => highlight(e.dataset.field));
    e.addEventListener('focus', () => choose(e.dataset.field));
    e.addEventListener('click', () => choose(e.dataset.field));
  }
  showPage(0);
  return root;
}

async function batches(name, partition, offset) {
  const r = await api('GET', '/topics/' + enc(name) + '/partitions/' + partition + '/batches?limit=20&offset=' + offset);
  const out = el('div', { id: 'batch-detail' });
  const rows = r.batches.map((b, i) => el('tr', { 'data-batch': b.base_offset },
    el('td', {}, el('a', { href: '#', onclick: (ev) => { ev.preventDefault(); out.replaceChildren(inspectBatch(b)); } },
      b.base_offset + '..' + b.last_offset)),
    num(b.records_count), num(b.batch_length + 12), el('td', {}, b.compression),
    el('td', { class: 'crc' }, b.crc_valid ? '✓' : '✗')));
  main.replaceChildren(
    el('h1', {}, el('a', { href: '#/topics/' + enc(name) }, name), ' / partition ' + partition + ' / batches'),
    table('batches', ['offsets', 'records', 'bytes', 'codec', 'crc'], rows), out);
  if (r.batches.length) out.replaceChildren(inspectBatch(r.batches[0]));
}

// ---- Groups -----------------------------------------------------------------------------------

async function groups() {
  const { groups } = await api('GET', '/groups');
  const rows = groups.map((g) => el('tr', { 'data-group': g.group_id },
    el('td', {}, el('a', { href: '#/groups/' + enc(g.group_id) }, g.group_id)),
    el('td', {}, g.state || '–'), el('td', {}, g.group_type || '–'), num(g.partitions), num(g.total_lag)));
  main.replaceChildren(el('h1', {}, 'Consumer groups'),
    rows.length ? table('groups', ['group', 'state', 'type', 'partitions', 'lag'], rows)
                : el('p', { class: 'muted' }, 'No groups yet.'));
  refreshLater(5000);
}

async function group(id) {
  const g = await api('GET', '/groups/' + enc(id));
  const members = g.members.map((m) => el('tr', {}, el('td', { class: 'data' }, m.member_id),
    el('td', {}, m.client_id), el('td', {}, m.client_host),
    el('td', {}, m.assignment.map((a) => a.topic + ': ' + a.partitions.join(',')).join('; '))));
  const offsets = g.offsets.map((o) => el('tr', { 'data-partition': o.topic + '-' + o.partition },
    el('td', {}, el('a', { href: '#/topics/' + enc(o.topic) }, o.topic)), num(o.partition),
    num(o.committed_offset), num(o.high_watermark), el('td', { class: 'num lag' }, o.lag)));
  const topicsOf = [...new Set(g.offsets.map((o) => o.topic))];
  const reset = el('form', { id: 'reset-offsets', class: 'inline', onsubmit: async (ev) => {
    ev.preventDefault();
    const f = ev.target;
    const to = f.elements.to.value === 'offset' ? parseInt(f.elements.offset.value, 10) : f.elements.to.value;
    if (!confirm('Reset the offsets of ' + id + ' on ' + f.elements.topic.value + ' to ' + to + '?')) return;
    try {
      await api('POST', '/groups/' + enc(id) + '/offsets', { topic: f.elements.topic.value, to });
      route();
    } catch (e) { showError(e.message); }
  } },
    el('label', {}, 'topic', el('select', { name: 'topic', id: 'reset-topic' }, topicsOf.map((t) => el('option', { value: t }, t)))),
    el('label', {}, 'to', el('select', { name: 'to', id: 'reset-to' },
      el('option', { value: 'earliest' }, 'earliest'), el('option', { value: 'latest' }, 'latest'),
      el('option', { value: 'offset' }, 'offset'))),
    el('label', {}, 'offset', el('input', { name: 'offset', id: 'reset-offset', type: 'number', min: 0 })),
    el('button', { type: 'submit', disabled: g.members.length > 0 || topicsOf.length === 0 }, 'Reset offsets'),
    g.members.length > 0 ? el('span', { class: 'muted' }, ' (only while the group has no members)') : null);
  main.replaceChildren(
    el('h1', { id: 'group-name' }, id),
    el('p', { class: 'muted' }, (g.state || 'no state') + ' · ' + (g.protocol || g.group_type || '') + ' · total lag ',
       el('strong', { id: 'group-total-lag' }, g.total_lag)),
    el('h2', {}, 'Members'),
    members.length ? table('group-members', ['member', 'client id', 'host', 'assignment'], members)
                   : el('p', { class: 'muted' }, 'No members.'),
    el('h2', {}, 'Committed offsets and lag'),
    table('group-offsets', ['topic', 'partition', 'committed', 'high watermark', 'lag'], offsets),
    el('h2', {}, 'Reset offsets'), reset);
  refreshLater(5000);
}

// ---- Routing ----------------------------------------------------------------------------------

async function route() {
  clearTimeout(refreshTimer);
  destroyCharts();
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  for (const a of document.querySelectorAll('nav a')) {
    a.classList.toggle('active', a.getAttribute('href') === '#/' + (parts[0] || ''));
  }
  try {
    if (parts[0] === 'topics' && parts[1] && parts[2] === 'batches') {
      await batches(parts[1], parts[3] || '0', parts[4] || '0');
    } else if (parts[0] === 'topics' && parts[1]) await topic(parts[1]);
    else if (parts[0] === 'topics') await topics();
    else if (parts[0] === 'groups' && parts[1]) await group(parts[1]);
    else if (parts[0] === 'groups') await groups();
    else await overview();
  } catch (e) {
    showError(e.message);
  }
}

window.addEventListener('hashchange', route);
route();
