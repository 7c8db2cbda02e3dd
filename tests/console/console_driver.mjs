// Drives the web console in headless Chromium for tests/console/console_test.py, one command at a time.
//
//   node console_driver.mjs --url http://127.0.0.1:PORT/ --chromium /usr/bin/chromium --shots DIR
//
// Reads one JSON command per line on stdin and answers one JSON line on stdout ({"ok":true,...} or
// {"ok":false,"error":"..."}). Commands:
//   {"op":"goto","hash":"#/topics"}         sets the hash, waits for the view to render; answers the page's contents
//   {"op":"extract"}                        the page's contents: title, h1, notice, facts, cards, tables, outputs
//   {"op":"fill","label":L,"value":V}       fills (or selects in) the form field labelled L
//   {"op":"check","label":L,"on":true}      (un)checks the checkbox labelled L
//   {"op":"click","name":N}                 clicks the button named N (accepting a confirm() dialog)
//   {"op":"keys","keys":["g","t"]}          presses keys on the page (keyboard navigation)
//   {"op":"wait_text","text":T,"ms":5000}   waits until the main area or the notice shows T
//   {"op":"wait_view","path":"/topics"}     waits until the view of that path has rendered
//   {"op":"shot","name":"overview"}         saves DIR/overview.png (the full page)
//   {"op":"quit"}
// Every wait is bounded (10 s unless "ms" says otherwise).
import {chromium} from 'playwright-core';
import readline from 'node:readline';
import path from 'node:path';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));

const browser = await chromium.launch({
  executablePath: args.chromium || '/usr/bin/chromium',
  headless: true,
  // As root in a sandboxless container; no background traffic to hosts this machine cannot reach.
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
});
const page = await browser.newPage({viewport: {width: 1280, height: 900}});
const consoleErrors = [];
page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
page.on('pageerror', (e) => consoleErrors.push('pageerror: ' + e.message));
page.on('dialog', (d) => d.accept());
await page.goto(args.url, {waitUntil: 'load'});

function extract() {
  const text = (e) => (e ? e.innerText.trim() : '');
  const main = document.getElementById('main');
  const tables = [...main.querySelectorAll('table')].map((t) => ({
    caption: text(t.querySelector('caption')),
    headers: [...t.querySelectorAll('thead th')].map(text),
    rows: [...t.querySelectorAll('tbody tr')].map((r) => [...r.children].map(text)),
  }));
  const facts = {};
  for (const dl of main.querySelectorAll('dl.facts'))
    for (const dt of dl.querySelectorAll('dt')) facts[text(dt)] = text(dt.nextElementSibling);
  const cards = {};
  for (const li of main.querySelectorAll('.cards li')) cards[text(li.querySelector('.label'))] = text(li.querySelector('.value'));
  const outputs = {};
  for (const o of main.querySelectorAll('output[id]')) outputs[o.id] = text(o);
  const active = document.activeElement;
  return {
    title: document.title, hash: location.hash, view: main.dataset.path || null,
    h1: text(main.querySelector('h1')), notice: text(document.getElementById('notice')),
    facts, cards, tables, outputs,
    status: [...main.querySelectorAll('[role=status]')].map(text),
    focused: active ? active.tagName.toLowerCase() + ':' + text(active).slice(0, 80) : null,
    disabled: [...main.querySelectorAll('button:disabled')].map(text),
    text: main.innerText.slice(0, 20000),
  };
}

async function waitView(p, ms) {
  await page.waitForFunction((want) => {
    const m = document.getElementById('main');
    return m.dataset.path === want && !m.hasAttribute('aria-busy');
  }, p, {timeout: ms || 10000});
}

async function run(cmd) {
  switch (cmd.op) {
    case 'goto': {
      const p = (cmd.hash.replace(/^#/, '') || '/').split('?')[0];
      await page.evaluate((h) => { location.hash = h; }, cmd.hash);
      await waitView(p, cmd.ms);
      return {page: await page.evaluate(extract)};
    }
    case 'extract': return {page: await page.evaluate(extract)};
    case 'fill': {
      const field = page.getByLabel(cmd.label, {exact: true});
      const tag = await field.evaluate((e) => e.tagName.toLowerCase());
      if (tag === 'select') await field.selectOption(cmd.value);
      else await field.fill(String(cmd.value));
      return {};
    }
    case 'check': {
      const box = page.getByLabel(cmd.label, {exact: true});
      if (cmd.on === false) await box.uncheck(); else await box.check();
      return {};
    }
    case 'click': await page.getByRole('button', {name: cmd.name, exact: true}).click(); return {};
    case 'keys':
      for (const k of cmd.keys) await page.keyboard.press(k);
      return {};
    case 'wait_text':
      await page.waitForFunction((t) => (document.getElementById('main').innerText + '\n' +
        document.getElementById('notice').innerText).includes(t), cmd.text, {timeout: cmd.ms || 10000});
      return {page: await page.evaluate(extract)};
    case 'wait_view': await waitView(cmd.path, cmd.ms); return {page: await page.evaluate(extract)};
    case 'shot': {
      const file = path.join(args.shots, cmd.name + '.png');
      await page.screenshot({path: file, fullPage: true});
      return {file};
    }
    case 'errors': return {errors: consoleErrors.splice(0)};
    default: throw new Error('unknown op ' + cmd.op);
  }
}

const lines = readline.createInterface({input: process.stdin});
for await (const line of lines) {
  if (!line.trim()) continue;
  let cmd;
  try { cmd = JSON.parse(line); } catch (e) { console.log(JSON.stringify({ok: false, error: 'bad JSON: ' + e.message})); continue; }
  if (cmd.op === 'quit') break;
  try {
    const r = await run(cmd);
    console.log(JSON.stringify(Object.assign({ok: true}, r)));
  } catch (e) {
    console.log(JSON.stringify({ok: false, error: String(e && e.message || e).slice(0, 2000)}));
  }
}
await browser.close();
