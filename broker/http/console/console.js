// The Sluice console: a client of the broker's own admin API (/v1/..., broker/http/openapi.yaml) and /metrics.
// No framework and no build step: views are functions that build DOM nodes (text is always set as text, never
// parsed as HTML), chosen by the location hash (#/topics/orders). Each view returns a cleanup function that stops
// its timers when another view replaces it.
'use strict';

(() => {
  const main = document.getElementById('main');
  const notice = document.getElementById('notice');

  // ---- small DOM helpers ----

  /** el('td', {class: 'num'}, 'text', node, ...): an element; null/false children are skipped. */
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else if (k === 'value' && 'value' in e) e.value = v;
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    append(e, children);
    return e;
  }
  function append(e, children) {
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }
  function svg(tag, attrs) {
    const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    return e;
  }
  const link = (href, text) => el('a', {href}, text);
  const topicHref = (t) => '#/topics/' + encodeURIComponent(t);
  const groupHref = (g) => '#/groups/' + encodeURIComponent(g);

  /** A table: columns [{label, num}], rows of cell contents (text or nodes). */
  function table(caption, columns, rows, empty) {
    const head = el('tr', {}, columns.map((c) => el('th', {scope: 'col', class: c.num ? 'num' : null}, c.label)));
    const body = el('tbody', {}, rows.map((r) => el('tr', {}, r.map((cell, i) =>
      i === 0 ? el('th', {scope: 'row'}, cell) : el('td', {class: columns[i].num ? 'num' : null}, cell)))));
    const t = el('table', {}, caption ? el('caption', {}, caption) : null, el('thead', {}, head), body);
    // Without rows: the sentence saying so instead of an empty table.
    if (!rows.length && empty) return el('p', {class: 'muted empty'}, empty);
    return t;
  }
  /** A form field: its label (for=) above the control. */
  let fieldIds = 0;
  function field(text, control) {
    if (!control.id) control.id = 'field-' + (++fieldIds);
    return el('div', {class: 'field'}, el('label', {for: control.id}, text), control);
  }
  function checkField(text, box) {
    if (!box.id) box.id = 'field-' + (++fieldIds);
    return el('div', {class: 'field check'}, box, el('label', {for: box.id}, text));
  }
  function facts(pairs) {
    return el('dl', {class: 'facts'}, pairs.map(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
  }
  function cards(items) {
    return el('ul', {class: 'cards'}, items.map(([label, value, cls]) =>
      el('li', {}, el('span', {class: 'label'}, label), el('span', {class: 'value ' + (cls || '')}, value))));
  }

  let shownAt = -Infinity;
  /** Replaces the view's content (null and false children skipped, arrays flattened). */
  function setMain(...children) {
    main.replaceChildren();
    append(main, children);
  }
  function show(kind, text) {
    shownAt = performance.now();
    notice.replaceChildren(el('p', {class: kind, role: kind === 'error' ? 'alert' : null}, text));
  }
  function clearNotice() { notice.replaceChildren(); }

  function bytes(n) {
    if (n === undefined || n === null || n < 0) return '—';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0, v = n;
    while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return el('span', {title: n + ' bytes'}, i === 0 ? n + ' B' : v.toFixed(v < 10 ? 2 : 1) + ' ' + units[i]);
  }
  function rate(v, unit) {
    if (v === null || v === undefined || !isFinite(v)) return '—';
    return (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)) + ' ' + unit;
  }
  function isoTime(ms) {
    if (typeof ms !== 'number' || ms < 0) return String(ms);
    const d = new Date(ms);
    return isNaN(d.getTime()) ? String(ms) : d.toISOString();
  }

  // ---- the API ----

  class ApiError extends Error {
    constructor(status, body) {
      const name = body && body.error ? body.error : 'HTTP_' + status;
      super(name + (body && body.message && body.message !== name ? ': ' + body.message : ''));
      this.status = status; this.name_ = name;
    }
  }
  /** A JSON call to the admin API; resolves to the decoded body (null for 204), rejects with ApiError. */
  async function api(method, path, body, signal) {
    const init = {method, headers: {Accept: 'application/json'}, signal};
    if (body !== undefined) { init.body = JSON.stringify(body); init.headers['Content-Type'] = 'application/json'; }
    const res = await fetch(path, init);
    const text = await res.text();
    let data = null;
    if (text) { try { data = JSON.parse(text); } catch (e) { data = {error: 'HTTP_' + res.status, message: text.slice(0, 200)}; } }
    if (!res.ok) throw new ApiError(res.status, data);
    return data;
  }
  const enc = encodeURIComponent;

  /** Prometheus text (0.0.4) to [{name, labels, value}]. */
  function parseMetrics(text) {
    const out = [];
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
    const label = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
    for (const line of text.split('\n')) {
      if (!line || line[0] === '#') continue;
      const m = sample.exec(line);
      if (!m) continue;
      const labels = {};
      if (m[2]) for (const l of m[2].matchAll(label)) labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => c === 'n' ? '\n' : c);
      out.push({name: m[1], labels, value: Number(m[3])});
    }
    return out;
  }
  async function scrape(signal) {
    const res = await fetch('/metrics', {signal});
    if (!res.ok) throw new ApiError(res.status, null);
    return {at: performance.now(), samples: parseMetrics(await res.text())};
  }
  /** The per-second rate of counter `name` (samples matching pred) between two scrapes; a counter reset reads 0. */
  function perSecond(now, last, name, pred) {
    return Math.max(0, sum(now.samples, name, pred) - sum(last.samples, name, pred)) / ((now.at - last.at) / 1000);
  }
  function sum(samples, name, pred) {
    let s = 0;
    for (const x of samples) if (x.name === name && (!pred || pred(x.labels))) s += x.value;
    return s;
  }

  /** Every topic with its description (partitions and offsets, no configs), in parallel. */
  async function describeAll(signal) {
    const list = await api('GET', '/v1/topics', undefined, signal);
    const described = await Promise.all(list.topics.map((t) =>
      api('GET', '/v1/topics/' + enc(t.name) + '?configs=false', undefined, signal).catch((e) => ({name: t.name, error: e.message}))));
    return list.topics.map((t, i) => Object.assign({}, t, {detail: described[i]}));
  }
  const messagesOf = (d) => (d && d.partitions ? d.partitions.reduce((a, p) =>
    a + (p.high_watermark >= 0 && p.log_start_offset >= 0 ? p.high_watermark - p.log_start_offset : 0), 0) : 0);
  const underReplicated = (p) => p.isr.length < p.replicas.length;

  // ---- views ----

  async function overview(_, signal) {
    const [cluster, brokers, topics] = await Promise.all([
      api('GET', '/v1/cluster', undefined, signal), api('GET', '/v1/brokers', undefined, signal), describeAll(signal)]);
    let partitions = 0, internalPartitions = 0, under = [], offline = [];
    for (const t of topics) {
      if (!t.detail || !t.detail.partitions) continue;
      for (const p of t.detail.partitions) {
        if (t.internal) internalPartitions++;
        else partitions++;
        if (underReplicated(p)) under.push([t.name, p]);
        if (p.leader < 0) offline.push([t.name, p]);
      }
    }
    const internal = topics.filter((t) => t.internal).length;
    setMain(
      el('h1', {tabindex: -1}, 'Cluster overview'),
      facts([['Cluster id', cluster.cluster_id], ['Controller', 'broker ' + cluster.controller_id],
             ['This console is served by', 'broker ' + cluster.broker_id]]),
      cards([['Brokers', brokers.brokers.length], ['Topics', topics.length - internal],
             ['Partitions', partitions], ['Internal topics', internal], ['Internal partitions', internalPartitions],
             ['Under-replicated partitions', under.length, under.length ? 'bad' : 'good'],
             ['Offline partitions', offline.length, offline.length ? 'bad' : 'good']]),
      el('h2', {}, 'Brokers'),
      table(null, [{label: 'Broker'}, {label: 'Listeners'}, {label: 'Role'}], brokers.brokers.map((b) => [
        String(b.id),
        b.listeners.map((l) => l.name + ' ' + l.host + ':' + l.port + ' (' + l.security_protocol + ')').join(', '),
        b.controller ? 'controller' : 'broker'])),
      el('h2', {}, 'Under-replicated partitions'),
      table(null, [{label: 'Partition'}, {label: 'Leader', num: true}, {label: 'Replicas'}, {label: 'ISR'}],
        under.map(([t, p]) => [link(topicHref(t), t + '-' + p.partition), String(p.leader), p.replicas.join(', '), p.isr.join(', ')]),
        'None: every partition has its whole replica set in sync.'));
  }

  async function topicsView(_, signal) {
    const topics = await describeAll(signal);
    let showInternal = false, filter = '';
    const rateCells = new Map();
    const body = el('div');
    const render = () => {
      const rows = topics.filter((t) => (showInternal || !t.internal) && t.name.toLowerCase().includes(filter));
      rateCells.clear();
      body.replaceChildren(table(null, [{label: 'Topic'}, {label: 'Partitions', num: true}, {label: 'Replication', num: true},
        {label: 'Size', num: true}, {label: 'Messages', num: true}, {label: 'Messages in', num: true}],
      rows.map((t) => {
        const cell = el('span', {}, '—');
        rateCells.set(t.name, cell);
        return [link(topicHref(t.name), t.name), String(t.partitions), String(t.replication_factor),
          t.detail && !t.detail.error ? bytes(t.detail.size_bytes) : el('span', {class: 'bad'}, t.detail.error),
          String(messagesOf(t.detail)), cell];
      }), filter ? 'No topic matches "' + filter + '".' : 'No topics yet.'));
    };
    const form = createTopicForm(signal);
    setMain(
      el('h1', {tabindex: -1}, 'Topics'),
      el('div', {class: 'toolbar'},
        field('Filter', el('input', {type: 'search', 'data-search': true,
          oninput: (e) => { filter = e.target.value.trim().toLowerCase(); render(); }})),
        checkField('Show internal topics', el('input', {type: 'checkbox', onchange: (e) => { showInternal = e.target.checked; render(); }}))),
      body, form);
    render();
    // The message rate: two scrapes of kafka_server_brokertopicmetrics_messagesin_total, 3 s apart, then every 3 s.
    let last = null;
    const tick = async () => {
      try {
        const now = await scrape(signal);
        if (last) {
          for (const [name, cell] of rateCells)
            cell.textContent = rate(perSecond(now, last, 'kafka_server_brokertopicmetrics_messagesin_total', (l) => l.topic === name), 'msg/s');
        }
        last = now;
      } catch (e) { if (e.name !== 'AbortError') show('error', 'GET /metrics: ' + e.message); }
    };
    tick();
    const timer = setInterval(tick, 3000);
    return () => clearInterval(timer);
  }

  function createTopicForm(signal) {
    const name = el('input', {name: 'name', required: true, pattern: '[a-zA-Z0-9._\\-]+', maxlength: 249});
    const parts = el('input', {name: 'partitions', type: 'number', min: 1, value: '1'});
    const rf = el('input', {name: 'replication_factor', type: 'number', min: 1, placeholder: 'default'});
    const configs = el('textarea', {name: 'configs', placeholder: 'retention.ms=86400000\ncleanup.policy=delete'});
    return el('form', {class: 'create', 'aria-labelledby': 'create-topic', onsubmit: async (e) => {
      e.preventDefault();
      const body = {name: name.value.trim(), partitions: Number(parts.value || 1)};
      if (rf.value) body.replication_factor = Number(rf.value);
      const cfg = parseConfigLines(configs.value);
      if (cfg.error) { show('error', cfg.error); return; }
      if (Object.keys(cfg.values).length) body.configs = cfg.values;
      try {
        await api('POST', '/v1/topics', body, signal);
        show('ok', 'Created topic ' + body.name + ' with ' + body.partitions + ' partitions.');
        location.hash = topicHref(body.name);
      } catch (err) { show('error', 'Create ' + body.name + ': ' + err.message); }
    }},
    el('fieldset', {}, el('legend', {id: 'create-topic'}, 'Create a topic'),
      el('div', {class: 'inline'},
        field('Name', name), field('Partitions', parts), field('Replication factor', rf),
        field('Configs (key=value, one per line)', configs), el('button', {type: 'submit'}, 'Create topic'))));
  }
  function parseConfigLines(text) {
    const values = {};
    for (const raw of text.split('\n')) {
      const line = raw.trim();
      if (!line || line.startsWith('#')) continue;
      const i = line.indexOf('=');
      if (i <= 0) return {error: 'A config line must be key=value: "' + line + '"'};
      values[line.slice(0, i).trim()] = line.slice(i + 1).trim();
    }
    return {values};
  }

  async function topicDetail([name], signal) {
    const t = await api('GET', '/v1/topics/' + enc(name), undefined, signal);
    const configNames = Object.keys(t.configs || {}).sort();
    const setName = el('input', {name: 'config', list: 'config-names', required: true});
    const setValue = el('input', {name: 'value', required: true});
    const count = el('input', {name: 'count', type: 'number', min: t.partition_count + 1, value: String(t.partition_count + 1)});
    const alter = async (body, what) => {
      try {
        await api('PATCH', '/v1/topics/' + enc(name) + '/configs', body, signal);
        show('ok', what);
        route();
      } catch (err) { show('error', 'Alter configs of ' + name + ': ' + err.message); }
    };
    setMain(
      el('h1', {tabindex: -1}, 'Topic ', el('q', {}, name)),
      el('p', {}, link('#/topics', 'All topics'), ' · ', link(topicHref(name) + '/messages', 'Browse messages')),
      facts([['Topic id', t.topic_id], ['Partitions', String(t.partition_count)], ['Replication factor', String(t.replication_factor)],
             ['Size', bytes(t.size_bytes)], ['Messages', String(messagesOf(t))], ['Internal', t.internal ? 'yes' : 'no']]),
      el('h2', {}, 'Partitions'),
      table(null, [{label: 'Partition'}, {label: 'Leader', num: true}, {label: 'Replicas'}, {label: 'ISR'},
        {label: 'Log start', num: true}, {label: 'High watermark', num: true}, {label: 'Log end', num: true},
        {label: 'Size', num: true}, {label: 'Replica here'}],
      t.partitions.map((p) => [String(p.partition), String(p.leader), p.replicas.join(', '),
        el('span', {class: underReplicated(p) ? 'bad' : null}, p.isr.join(', ')),
        fmtOffset(p.log_start_offset), fmtOffset(p.high_watermark), fmtOffset(p.log_end_offset),
        p.size_bytes === undefined ? '—' : bytes(p.size_bytes), p.local_replica || 'none'])),
      el('form', {class: 'inline', onsubmit: async (e) => {
        e.preventDefault();
        try {
          await api('POST', '/v1/topics/' + enc(name) + '/partitions', {count: Number(count.value)}, signal);
          show('ok', name + ' now has ' + count.value + ' partitions.');
          route();
        } catch (err) { show('error', 'Add partitions to ' + name + ': ' + err.message); }
      }}, field('New partition count', count), el('button', {type: 'submit'}, 'Add partitions')),
      el('h2', {}, 'Configs'),
      el('form', {class: 'inline', 'aria-label': 'Set a config', onsubmit: (e) => {
        e.preventDefault();
        alter({set: {[setName.value.trim()]: setValue.value}}, 'Set ' + setName.value.trim() + '=' + setValue.value + ' on ' + name + '.');
      }}, field('Config', setName), field('Value', setValue), el('button', {type: 'submit'}, 'Set config'),
      el('datalist', {id: 'config-names'}, configNames.map((c) => el('option', {value: c})))),
      table(null, [{label: 'Config'}, {label: 'Value'}, {label: 'Source'}, {label: 'Action'}], configNames.map((c) => {
        const v = t.configs[c];
        const dynamic = v.source === 'DYNAMIC_TOPIC_CONFIG';
        return [c, v.sensitive ? '(sensitive)' : v.value === null ? el('span', {class: 'null'}, 'null') : v.value, v.source,
          dynamic && !v.read_only ? el('button', {type: 'button', class: 'secondary', 'aria-label': 'Reset ' + c + ' to its default',
            onclick: () => alter({delete: [c]}, 'Reset ' + c + ' of ' + name + ' to its default.')}, 'Reset to default') : ''];
      })),
      el('h2', {}, 'Delete'),
      el('p', {}, el('button', {type: 'button', class: 'danger', onclick: async () => {
        if (!window.confirm('Delete topic ' + name + ' and all its records?')) return;
        try {
          await api('DELETE', '/v1/topics/' + enc(name), undefined, signal);
          show('ok', 'Deleted topic ' + name + '.');
          location.hash = '#/topics';
        } catch (err) { show('error', 'Delete ' + name + ': ' + err.message); }
      }}, 'Delete topic ' + name)));
  }
  const fmtOffset = (o) => (o === undefined || o === null || o < 0 ? '—' : String(o));

  // ---- the message browser ----

  async function messagesView([name], signal) {
    const t = await api('GET', '/v1/topics/' + enc(name) + '?configs=false', undefined, signal);
    const q = new URLSearchParams(location.hash.split('?')[1] || '');
    const partition = el('select', {name: 'partition'}, el('option', {value: 'all'}, 'all'),
      t.partitions.map((p) => el('option', {value: String(p.partition)}, String(p.partition))));
    const from = el('select', {name: 'from'}, ['earliest', 'last', 'offset', 'timestamp'].map((v) =>
      el('option', {value: v}, {earliest: 'the beginning', last: 'the last N', offset: 'an offset', timestamp: 'a timestamp'}[v])));
    const at = el('input', {name: 'at', placeholder: 'offset, or epoch ms / 2026-12-04T10:00:00Z', size: 30});
    const limit = el('input', {name: 'limit', type: 'number', min: 1, max: 10000, value: '20'});
    const encoding = el('select', {name: 'encoding'}, [['utf8', 'text (base64 if binary)'], ['base64', 'base64'], ['hex', 'hex']].map(([v, l]) =>
      el('option', {value: v}, l)));
    const tail = el('input', {type: 'checkbox', name: 'tail'});
    for (const [k, e] of [['partition', partition], ['from', from], ['at', at], ['limit', limit], ['encoding', encoding]])
      if (q.get(k) !== null) e.value = q.get(k);
    const summary = el('p', {class: 'muted', role: 'status'});
    const results = el('div');
    let rows = [], next = new Map(), timer = null;

    const read = async (p, params) => {
      const r = await api('GET', '/v1/topics/' + enc(name) + '/partitions/' + p + '/records?' + params, undefined, signal);
      next.set(p, r.next_offset);
      return r.records;
    };
    const partitionsChosen = () => partition.value === 'all' ? t.partitions.map((p) => p.partition) : [Number(partition.value)];
    const render = () => {
      results.replaceChildren(table(null, [{label: 'Partition'}, {label: 'Offset', num: true}, {label: 'Timestamp'},
        {label: 'Key'}, {label: 'Value'}, {label: 'Headers'}],
      rows.map((r) => [String(r.partition), String(r.offset),
        el('time', {datetime: isoTime(r.timestamp), title: r.timestamp_type + ' ' + r.timestamp}, isoTime(r.timestamp)),
        bytesCell(r.key, r.key_encoding), bytesCell(r.value, r.value_encoding),
        r.headers.length ? el('ul', {class: 'headers'}, r.headers.map((h) => el('li', {}, h.key + ': ',
          h.value === null ? el('span', {class: 'null'}, 'null') : (h.value_encoding && h.value_encoding !== 'utf8' ? '[' + h.value_encoding + '] ' : '') + h.value))) : '']),
      'No records in this range.'));
    };
    const search = async () => {
      stopTail();
      const n = Math.min(10000, Math.max(1, Number(limit.value) || 20));
      const chosen = partitionsChosen();
      let params;
      if (from.value === 'offset') {
        if (!/^\d+$/.test(at.value.trim())) { show('error', 'An offset is a whole number.'); return; }
        params = (p) => 'offset=' + at.value.trim();
      } else if (from.value === 'timestamp') {
        const v = at.value.trim();
        const ms = /^\d+$/.test(v) ? Number(v) : Date.parse(v);
        if (!isFinite(ms)) { show('error', 'A timestamp is epoch milliseconds or a date such as 2026-12-04T10:00:00Z.'); return; }
        params = () => 'timestamp=' + ms;
      } else if (from.value === 'last') {
        params = null;  // from the current watermarks, read below
      } else {
        params = () => 'offset=earliest';
      }
      clearNotice();
      summary.textContent = 'Reading…';
      try {
        if (params === null) {
          // The description read at load may be old: take the current watermarks first.
          const fresh = await api('GET', '/v1/topics/' + enc(name) + '?configs=false', undefined, signal);
          const byId = new Map(fresh.partitions.map((p) => [p.partition, p]));
          params = (p) => 'offset=' + (byId.has(p) ? Math.max(byId.get(p).log_start_offset, byId.get(p).high_watermark - n) : 0);
        }
        // Each partition on its own: an offset that one partition does not have leaves that one out, not the rest.
        const got = await Promise.allSettled(chosen.map((p) => read(p, params(p) + '&limit=' + n + '&encoding=' + encoding.value)));
        const failed = [];
        rows = [];
        got.forEach((g, i) => {
          if (g.status === 'fulfilled') rows.push(...g.value);
          else failed.push([chosen[i], g.reason]);
        });
        if (failed.length === chosen.length) throw failed[0][1];
        if (chosen.length > 1) rows.sort((a, b) => a.timestamp - b.timestamp || a.partition - b.partition || a.offset - b.offset);
        if (from.value === 'timestamp' && chosen.length > 1) rows = rows.slice(0, n);
        summary.textContent = rows.length + ' record' + (rows.length === 1 ? '' : 's') + ' from ' +
          (chosen.length > 1 ? chosen.length - failed.length + ' partitions' : 'partition ' + chosen[0]) + '.' +
          (failed.length ? ' Left out: ' + failed.map(([p, e]) => 'partition ' + p + ' (' + (e.name_ || e.message) + ')').join(', ') + '.' : '');
        render();
        history.replaceState(null, '', '#/topics/' + enc(name) + '/messages?' + new URLSearchParams({partition: partition.value,
          from: from.value, at: at.value, limit: String(n), encoding: encoding.value}));
        if (tail.checked) startTail();
      } catch (err) {
        if (err.name === 'AbortError') return;
        rows = [];
        results.replaceChildren();
        summary.textContent = '';
        show('error', 'Read ' + name + ': ' + err.message);
      }
    };
    // Live tail: every second, each chosen partition from the offset after the last record read.
    const startTail = () => {
      stopTail();
      const poll = async () => {
        const chosen = partitionsChosen().filter((p) => next.has(p));
        const got = await Promise.allSettled(chosen.map((p) =>
          read(p, 'offset=' + next.get(p) + '&limit=500&encoding=' + encoding.value)));
        if (timer === null) return;  // stopped meanwhile (another read, another view)
        const fresh = [];
        let stop = null;
        got.forEach((g, i) => {
          if (g.status === 'fulfilled') fresh.push(...g.value);
          // The log no longer has that offset (records deleted, the topic made again): go on from its start.
          else if (g.reason.name_ === 'OFFSET_OUT_OF_RANGE') next.set(chosen[i], 'earliest');
          else if (g.reason.name !== 'AbortError') stop = stop || g.reason;
        });
        fresh.sort((a, b) => a.timestamp - b.timestamp);
        if (fresh.length) {
          rows = rows.concat(fresh).slice(-1000);
          summary.textContent = 'Live: ' + rows.length + ' records shown, ' + fresh.length + ' new.';
          render();
        }
        if (stop) {  // once, not every second: the tail stops
          stopTail();
          tail.checked = false;
          show('error', 'Live tail of ' + name + ' stopped: ' + stop.message);
          return;
        }
        timer = setTimeout(poll, 1000);
      };
      timer = setTimeout(poll, 1000);
    };
    const stopTail = () => { if (timer !== null) clearTimeout(timer); timer = null; };
    tail.addEventListener('change', () => { if (tail.checked && next.size) startTail(); else stopTail(); });

    setMain(
      el('h1', {tabindex: -1}, 'Messages of ', el('q', {}, name)),
      el('p', {}, link(topicHref(name), 'Topic ' + name)),
      el('form', {class: 'inline', 'aria-label': 'Find records', onsubmit: (e) => { e.preventDefault(); search(); }},
        field('Partition', partition), field('From', from), field('Offset or time', at),
        field('Records (N)', limit), field('Show bytes as', encoding),
        checkField('Live tail', tail), el('button', {type: 'submit'}, 'Read')),
      summary, results);
    await search();
    return stopTail;
  }

  /** A key or value: null, JSON pretty-printed, text, or base64/hex with a switch to the other form. */
  function bytesCell(v, encoding) {
    if (v === null || v === undefined) return el('span', {class: 'null'}, 'null');
    if (encoding === 'utf8') {
      const trimmed = v.trim();
      if ((trimmed.startsWith('{') || trimmed.startsWith('[')) && trimmed.length < 200000) {
        try { return el('div', {}, el('span', {class: 'enc'}, 'JSON'), el('pre', {class: 'value'}, JSON.stringify(JSON.parse(trimmed), null, 2))); } catch (e) { /* text */ }
      }
      return el('pre', {class: 'value'}, v);
    }
    const pre = el('pre', {class: 'value'}, v);
    const badge = el('span', {class: 'enc'}, encoding);
    let current = encoding;
    const flip = el('button', {type: 'button', class: 'secondary', onclick: () => {
      current = current === 'base64' ? 'hex' : 'base64';
      pre.textContent = current === 'hex' ? b64ToHex(v, encoding) : hexToB64(v, encoding);
      badge.textContent = current;
      flip.textContent = 'as ' + (current === 'base64' ? 'hex' : 'base64');
    }}, 'as ' + (encoding === 'base64' ? 'hex' : 'base64'));
    return el('div', {}, badge, ' ', flip, pre);
  }
  function rawBytes(v, encoding) {
    if (encoding === 'hex') return Uint8Array.from(v.match(/../g) || [], (h) => parseInt(h, 16));
    return Uint8Array.from(atob(v), (c) => c.charCodeAt(0));
  }
  const b64ToHex = (v, e) => Array.from(rawBytes(v, e), (b) => b.toString(16).padStart(2, '0')).join('');
  /** base64 of the bytes, built in 32 KiB slices (a spread of a large value overflows the call stack). */
  const hexToB64 = (v, e) => {
    const bytes = rawBytes(v, e);
    let text = '';
    for (let i = 0; i < bytes.length; i += 32768) text += String.fromCharCode.apply(null, bytes.subarray(i, i + 32768));
    return btoa(text);
  };

  // ---- consumer groups ----

  async function groupsView(_, signal) {
    const list = await api('GET', '/v1/groups', undefined, signal);
    const described = await Promise.all(list.groups.map((g) =>
      api('GET', '/v1/groups/' + enc(g.group_id), undefined, signal).catch((e) => ({error: e.message}))));
    setMain(
      el('h1', {tabindex: -1}, 'Consumer groups'),
      table(null, [{label: 'Group'}, {label: 'State'}, {label: 'Type'}, {label: 'Members', num: true},
        {label: 'Partitions', num: true}, {label: 'Lag', num: true}],
      list.groups.map((g, i) => {
        const d = described[i];
        return [link(groupHref(g.group_id), g.group_id), g.state, g.type + (g.protocol_type ? ' (' + g.protocol_type + ')' : ''),
          d.error ? '—' : String(d.members.length), d.error ? '—' : String(d.offsets.length),
          d.error ? el('span', {class: 'bad'}, d.error) : String(d.lag)];
      }), 'No consumer groups on this broker.'));
  }

  async function groupDetail([group], signal) {
    const g = await api('GET', '/v1/groups/' + enc(group), undefined, signal);
    const empty = g.members.length === 0;
    const to = el('select', {name: 'to'}, ['earliest', 'latest', 'offset', 'timestamp'].map((v) => el('option', {value: v}, v)));
    const value = el('input', {name: 'value', placeholder: 'offset, or epoch ms / ISO date', size: 26});
    const topics = [...new Set(g.offsets.map((o) => o.topic))].sort();
    const which = el('select', {name: 'topic'}, el('option', {value: ''}, 'every committed partition'),
      topics.map((t) => el('option', {value: t}, t)));
    const dry = el('input', {type: 'checkbox', name: 'dry_run'});
    const result = el('div', {role: 'status'});
    const reset = async (e) => {
      e.preventDefault();
      const body = {to: to.value, dry_run: dry.checked};
      if (to.value === 'offset' || to.value === 'timestamp') {
        const v = value.value.trim();
        const n = /^\d+$/.test(v) ? Number(v) : to.value === 'timestamp' ? Date.parse(v) : NaN;
        if (!isFinite(n)) { show('error', 'Give ' + (to.value === 'offset' ? 'an offset' : 'a timestamp') + ' to reset to.'); return; }
        body[to.value] = n;
      }
      if (which.value) body.topics = [which.value];
      try {
        const r = await api('POST', '/v1/groups/' + enc(group) + '/offsets', body, signal);
        show('ok', (r.dry_run ? 'Dry run: would reset ' : 'Reset ') + r.offsets.length + ' partition' + (r.offsets.length === 1 ? '' : 's') +
          ' of group ' + group + ' to ' + to.value + '.');
        if (r.dry_run) {
          result.replaceChildren(table('Offsets the reset would commit', [{label: 'Partition'}, {label: 'New offset', num: true}],
            r.offsets.map((o) => [o.topic + '-' + o.partition, String(o.offset)])));
        } else {
          route();
        }
      } catch (err) { show('error', 'Reset offsets of ' + group + ': ' + err.message); }
    };
    setMain(
      el('h1', {tabindex: -1}, 'Group ', el('q', {}, group)),
      el('p', {}, link('#/groups', 'All groups')),
      facts([['State', g.state], ['Protocol type', g.protocol_type || '—'], ['Assignor', g.protocol || '—'],
             ['Members', String(g.members.length)], ['Total lag', String(g.lag)]]),
      el('h2', {}, 'Members'),
      table(null, [{label: 'Member'}, {label: 'Client id'}, {label: 'Host'}, {label: 'Assignment'}], g.members.map((m) => [
        m.member_id + (m.group_instance_id ? ' (' + m.group_instance_id + ')' : ''), m.client_id, m.client_host,
        m.assignment.map((a) => a.topic + ': ' + a.partitions.join(', ')).join('; ')]), 'No members: the group is empty.'),
      el('h2', {}, 'Offsets and lag'),
      table(null, [{label: 'Partition'}, {label: 'Committed', num: true}, {label: 'Log end', num: true}, {label: 'Lag', num: true},
        {label: 'Member'}], g.offsets.map((o) => [link(topicHref(o.topic), o.topic + '-' + o.partition),
        fmtOffset(o.committed_offset), fmtOffset(o.log_end_offset), o.lag === null || o.lag === undefined ? '—' : String(o.lag),
        o.member_id || '—']), 'No committed offsets.'),
      el('h2', {}, 'Reset offsets'),
      empty ? null : el('p', {class: 'warn'}, 'The group has members: stop its consumers first (Kafka resets only an empty group).'),
      el('form', {class: 'inline', 'aria-label': 'Reset offsets', onsubmit: reset},
        field('To', to), field('Offset or time', value), field('Partitions', which),
        checkField('Dry run', dry), el('button', {type: 'submit', disabled: !empty}, 'Reset offsets')),
      result,
      el('h2', {}, 'Delete'),
      el('p', {}, el('button', {type: 'button', class: 'danger', disabled: !empty, onclick: async () => {
        if (!window.confirm('Delete group ' + group + ' and its committed offsets?')) return;
        try {
          await api('DELETE', '/v1/groups/' + enc(group), undefined, signal);
          show('ok', 'Deleted group ' + group + '.');
          location.hash = '#/groups';
        } catch (err) { show('error', 'Delete ' + group + ': ' + err.message); }
      }}, 'Delete group ' + group)));
  }

  // ---- live throughput from /metrics ----

  const SERIES = [
    {id: 'messages-in', title: 'Messages in', unit: 'msg/s', name: 'kafka_server_brokertopicmetrics_messagesin_total'},
    {id: 'bytes-in', title: 'Bytes in', unit: 'B/s', name: 'kafka_server_brokertopicmetrics_bytesin_total'},
    {id: 'bytes-out', title: 'Bytes out', unit: 'B/s', name: 'kafka_server_brokertopicmetrics_bytesout_total'},
    {id: 'requests', title: 'Requests', unit: 'req/s', name: 'kafka_network_requestmetrics_requests_total'},
  ];
  const POINTS = 60;

  async function metricsView(_, signal) {
    const every = Math.max(250, Number(new URLSearchParams(location.hash.split('?')[1] || '').get('interval_ms')) || 2000);
    const charts = SERIES.map((s) => {
      const out = el('output', {id: 'now-' + s.id, 'aria-live': 'off'}, '—');
      const max = el('span', {class: 'max muted'});
      const area = svg('svg', {viewBox: '0 0 600 150', preserveAspectRatio: 'none', role: 'img', 'aria-label': s.title + ' per second'});
      return Object.assign({}, s, {out, max, area, points: [], fig: el('figure', {class: 'chart'},
        el('figcaption', {}, el('span', {}, s.title), out), max, area)});
    });
    // Totals per topic are the sums of the per-topic series (a sample without a topic label is the broker total).
    const perTopic = el('div');
    setMain(el('h1', {tabindex: -1}, 'Throughput'),
      el('p', {class: 'muted'}, 'Rates from /metrics, scraped every ' + every / 1000 + ' s; the last ' + POINTS + ' samples.'),
      el('div', {class: 'charts'}, charts.map((c) => c.fig)), el('h2', {}, 'By topic'), perTopic);
    let last = null;
    const tick = async () => {
      let now;
      try { now = await scrape(signal); } catch (e) { if (e.name !== 'AbortError') show('error', 'GET /metrics: ' + e.message); return; }
      if (last) {
        for (const c of charts) {
          const v = perSecond(now, last, c.name, topicTotal(now.samples, c.name));
          c.points.push(v);
          if (c.points.length > POINTS) c.points.shift();
          c.out.textContent = rate(v, c.unit);
          draw(c);
        }
        const names = [...new Set(now.samples.filter((x) => x.name === SERIES[0].name && x.labels.topic).map((x) => x.labels.topic))].sort();
        perTopic.replaceChildren(table(null, [{label: 'Topic'}, {label: 'Messages in', num: true}, {label: 'Bytes in', num: true},
          {label: 'Bytes out', num: true}], names.map((t) => [link(topicHref(t), t), ...SERIES.slice(0, 3).map((s) => {
          return rate(perSecond(now, last, s.name, (l) => l.topic === t), s.unit);
        })]), 'No topic has had traffic yet.'));
      }
      last = now;
    };
    await tick();
    const timer = setInterval(tick, every);
    return () => clearInterval(timer);
  }
  /** The labels to add up for a broker-wide rate: the per-topic samples when there are any, else all of them. */
  function topicTotal(samples, name) {
    const hasTopic = samples.some((x) => x.name === name && x.labels.topic !== undefined);
    const hasTotal = samples.some((x) => x.name === name && x.labels.topic === undefined);
    return hasTopic && hasTotal ? (l) => l.topic === undefined : null;
  }
  function draw(c) {
    const max = Math.max(1, ...c.points);
    const w = 600, h = 150, step = w / (POINTS - 1);
    const pts = c.points.map((v, i) => ((POINTS - c.points.length + i) * step).toFixed(1) + ',' + (h - 4 - (v / max) * (h - 20)).toFixed(1));
    c.max.textContent = 'top line: ' + rate(max, c.unit);
    c.area.replaceChildren(
      svg('line', {class: 'grid', x1: 0, y1: h - 4, x2: w, y2: h - 4}),
      svg('line', {class: 'grid', x1: 0, y1: 16, x2: w, y2: 16}),
      svg('polyline', {class: 'line', points: pts.join(' ')}));
  }

  // ---- routing and keys ----

  const ROUTES = [
    [/^\/?$/, overview, 'overview', 'Overview'],
    [/^\/topics$/, topicsView, 'topics', 'Topics'],
    [/^\/topics\/([^/]+)$/, topicDetail, 'topics', 'Topic'],
    [/^\/topics\/([^/]+)\/messages$/, messagesView, 'topics', 'Messages'],
    [/^\/groups$/, groupsView, 'groups', 'Consumer groups'],
    [/^\/groups\/([^/]+)$/, groupDetail, 'groups', 'Group'],
    [/^\/metrics$/, metricsView, 'metrics', 'Throughput'],
  ];
  let current = null;  // {abort, cleanup}

  async function route() {
    if (current) { current.abort.abort(); if (current.cleanup) current.cleanup(); }
    const abort = new AbortController();
    const me = current = {abort, cleanup: null};
    const path = (location.hash.replace(/^#/, '') || '/').split('?')[0];
    const found = ROUTES.find(([re]) => re.test(path));
    document.querySelectorAll('nav a[data-view]').forEach((a) => a.removeAttribute('aria-current'));
    let args = null;
    if (found) {
      try { args = found[0].exec(path).slice(1).map(decodeURIComponent); } catch (e) { args = null; }  // a bad %-escape
    }
    const focusHeading = () => { const h1 = main.querySelector('h1'); if (h1 && focusOnRender) h1.focus(); };
    if (!found || !args) {
      setMain(el('h1', {tabindex: -1}, 'Not found'), el('p', {}, 'No view at ', el('code', {}, path), '. ', link('#/', 'Overview')));
      document.title = 'Not found · Sluice console';
      main.dataset.path = path;
      focusHeading();
      return;
    }
    const [, view, nav, title] = found;
    const navLink = document.querySelector('nav a[data-view="' + nav + '"]');
    if (navLink) navLink.setAttribute('aria-current', 'page');
    const heading = args.length ? title + ' ' + args[0] : title;
    document.title = heading + ' · Sluice console';
    main.setAttribute('aria-busy', 'true');
    try {
      const cleanup = await view(args, abort.signal);
      if (me !== current) { if (cleanup) cleanup(); return; }
      me.cleanup = cleanup || null;
    } catch (err) {
      if (err.name === 'AbortError' || me !== current) return;
      setMain(el('h1', {tabindex: -1}, heading), el('p', {class: 'bad', role: 'alert'}, err.message));
    } finally {
      // data-path names the view on screen once it has rendered (tests and scripts wait for it).
      if (me === current) { main.dataset.path = path; main.removeAttribute('aria-busy'); focusHeading(); }
    }
  }
  let focusOnRender = false;
  // A notice set just before the navigation ("Created topic ...") stays; an older one goes.
  window.addEventListener('hashchange', () => {
    focusOnRender = true;
    if (performance.now() - shownAt > 1000) clearNotice();
    route();
  });

  // g then o/t/g/m: go to a view; / focuses the view's search field; r reloads the view.
  let pendingG = false;
  document.addEventListener('keydown', (e) => {
    const tag = (e.target.tagName || '').toLowerCase();
    if (e.ctrlKey || e.metaKey || e.altKey || tag === 'input' || tag === 'textarea' || tag === 'select') return;
    if (pendingG) {
      pendingG = false;
      const to = {o: '#/', t: '#/topics', g: '#/groups', m: '#/metrics'}[e.key];
      if (to) { e.preventDefault(); location.hash = to; }
      return;
    }
    if (e.key === 'g') { pendingG = true; setTimeout(() => { pendingG = false; }, 1500); return; }
    if (e.key === '/') {
      const field = main.querySelector('[data-search], input');
      if (field) { e.preventDefault(); field.focus(); }
      return;
    }
    if (e.key === 'r') { e.preventDefault(); route(); }
  });

  api('GET', '/v1/cluster').then((c) => {
    document.getElementById('where').textContent = 'cluster ' + c.cluster_id + ' · broker ' + c.broker_id;
  }).catch(() => {});
  route();
})();
