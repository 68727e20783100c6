(function () {
  "use strict";
  var T0 = performance.now();
  var body = document.body;
  var errors = [];
  function fail(msg) {
    errors.push(String(msg));
    body.setAttribute("data-errors", String(errors.length));
    var b = document.getElementById("cm-error");
    if (b) { b.hidden = false; b.textContent = "Report script error: " + errors.join("; "); }
  }
  window.addEventListener("error", function (e) { fail(e.message || e); });

  function el(tag, cls, text) {
    var n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined && text !== null) n.textContent = String(text);
    return n;
  }
  function clear(n) { while (n.firstChild) n.removeChild(n.firstChild); }
  // Messages are Markdown with inline code only: `x` becomes <code>x</code>. Built with text nodes, never
  // markup, because messages quote the user's code; an unpaired backtick stays a backtick.
  function md(tag, cls, text) {
    var n = el(tag, cls), parts = String(text === undefined || text === null ? "" : text).split("`");
    if (parts.length % 2 === 0) { var tail = parts.pop(); parts[parts.length - 1] += "`" + tail; }
    parts.forEach(function (p, i) {
      if (!p) return;
      n.appendChild(i % 2 ? el("code", null, p) : document.createTextNode(p));
    });
    return n;
  }

  var D = JSON.parse(document.getElementById("cm-data").textContent);
  var F = D.findings, R = D.rules, FILES = D.files, MSG = D.messages;
  var I = {}; D.fields.forEach(function (k, i) { I[k] = i; });
  var SEV = { error: 0, warning: 1, info: 2 };
  var APP = { safe: 0, unsafe: 1, "display-only": 2, manual: 3 };
  var PAGE = 100;
  var state = { rule: "", impact: "", family: "", severity: "", applicability: "", file: "", q: "", sort: "plan", dir: -1, page: 0 };
  var KEYS = ["rule", "impact", "family", "severity", "applicability", "file", "q", "sort", "dir", "page"];
  var open = {};
  var hay = null;

  function ruleOf(f) { return R[f[I.rule]]; }
  function haystack(i) {
    if (!hay) {
      hay = new Array(F.length);
      for (var k = 0; k < F.length; k++) {
        var f = F[k], r = ruleOf(f);
        hay[k] = (r.id + " " + r.name + " " + r.family + " " + FILES[f[I.file]] + ":" + f[I.line] + " " + MSG[f[I.message]]).toLowerCase();
      }
    }
    return hay[i];
  }

  function readHash() {
    var h = location.hash.replace(/^#/, "");
    var next = { rule: "", impact: "", family: "", severity: "", applicability: "", file: "", q: "", sort: "plan", dir: -1, page: 0 };
    h.split("&").forEach(function (kv) {
      if (!kv) return;
      var i = kv.indexOf("=");
      var k = decodeURIComponent(i < 0 ? kv : kv.slice(0, i));
      var v = i < 0 ? "" : decodeURIComponent(kv.slice(i + 1).replace(/\+/g, " "));
      if (KEYS.indexOf(k) < 0) return;
      if (k === "dir") next.dir = v === "1" ? 1 : -1;
      else if (k === "page") next.page = Math.max(0, parseInt(v, 10) - 1 || 0);
      else next[k] = v;
    });
    state = next;
  }
  function writeHash() {
    var parts = [];
    KEYS.forEach(function (k) {
      var v = state[k];
      if (k === "sort" && v === "plan") return;
      if (k === "dir" && v === -1) return;
      if (k === "page") { if (v > 0) parts.push("page=" + (v + 1)); return; }
      if (v !== "" && v !== undefined) parts.push(k + "=" + encodeURIComponent(v));
    });
    var h = parts.join("&");
    if (location.hash.replace(/^#/, "") !== h) history.replaceState(null, "", h ? "#" + h : location.pathname + location.search);
  }

  function cmp(a, b) { return a < b ? -1 : a > b ? 1 : 0; }
  function sortKey(name) {
    switch (name) {
      case "rule": return function (a, b) { return cmp(R[F[a][I.rule]].id, R[F[b][I.rule]].id); };
      case "family": return function (a, b) { return cmp(R[F[a][I.rule]].family, R[F[b][I.rule]].family); };
      case "severity": return function (a, b) { return cmp(SEV[F[a][I.severity]], SEV[F[b][I.severity]]); };
      case "applicability": return function (a, b) { return cmp(APP[F[a][I.applicability]], APP[F[b][I.applicability]]); };
      case "file": return function (a, b) { return cmp(FILES[F[a][I.file]], FILES[F[b][I.file]]) || cmp(F[a][I.line], F[b][I.line]); };
      case "effort": return function (a, b) { return cmp(F[a][I.effortMinutes], F[b][I.effortMinutes]); };
      case "message": return function (a, b) { return cmp(MSG[F[a][I.message]], MSG[F[b][I.message]]); };
      case "roi": return function (a, b) { return cmp(F[a][I.roi], F[b][I.roi]); };
      default: return function () { return 0; };  // "plan": the data arrive in plan order
    }
  }

  function selected() {
    var out = [], q = state.q.toLowerCase(), fileq = state.file.toLowerCase();
    for (var i = 0; i < F.length; i++) {
      var f = F[i], r = ruleOf(f);
      if (state.rule && r.id !== state.rule) continue;
      if (state.impact && f[I.impact] !== state.impact) continue;
      if (state.family && r.family !== state.family) continue;
      if (state.severity && f[I.severity] !== state.severity) continue;
      if (state.applicability && f[I.applicability] !== state.applicability) continue;
      if (fileq && FILES[f[I.file]].toLowerCase().indexOf(fileq) < 0) continue;
      if (q && haystack(i).indexOf(q) < 0) continue;
      out.push(i);
    }
    var c = sortKey(state.sort), dir = state.dir;
    // the data arrive in plan order (build breaks first); ties keep that order
    out.sort(function (a, b) { return dir * c(a, b) || a - b; });
    return out;
  }

  function fillSelect(id, values, labels) {
    var s = document.getElementById(id);
    values.forEach(function (v, i) {
      var o = el("option", null, labels ? labels[i] : v);
      o.value = v;
      s.appendChild(o);
    });
  }

  function srcLine(fileIdx, n) {
    var segs = D.src[String(fileIdx)] || [];
    for (var i = 0; i < segs.length; i++) {
      var s = segs[i];
      if (n >= s[0] && n < s[0] + s[1].length) return s[1][n - s[0]];
    }
    return null;
  }

  function codeBlock(rows) {
    var pre = el("pre", "code");
    rows.forEach(function (r) {
      var line = el("span", "ln " + (r.cls || ""));
      line.appendChild(el("span", "no", r.no));
      line.appendChild(el("span", "op", r.op || " "));
      line.appendChild(el("span", "tx", r.text));
      pre.appendChild(line);
      pre.appendChild(document.createTextNode("\n"));
    });
    return pre;
  }

  // A reference is text; a web address in it becomes a link (https only, built as an attribute, never markup).
  var URL_RX = /(https?:\/\/[^\s)\]'"<>]+|\bdocs\.nvidia\.com\/[^\s)\]'"<>]+)/;
  function refItem(x) {
    var li = el("li"), m = URL_RX.exec(x);
    if (!m) { li.textContent = x; return li; }
    var url = m[1].replace(/[.,;:]+$/, ""), href = /^https?:\/\//.test(url) ? url.replace(/^http:/, "https:") : "https://" + url;
    li.appendChild(document.createTextNode(x.slice(0, m.index)));
    var a = el("a", null, url);
    a.setAttribute("href", href);
    a.setAttribute("rel", "noopener noreferrer");
    a.setAttribute("target", "_blank");
    li.appendChild(a);
    li.appendChild(document.createTextNode(x.slice(m.index + url.length)));
    return li;
  }

  function details(i) {
    var f = F[i], r = ruleOf(f), box = el("div", "details");
    var head = el("div", "dhead");
    head.appendChild(el("strong", null, r.id + " " + r.name));
    head.appendChild(md("span", "muted", " — " + r.summary));
    box.appendChild(head);
    var vers = [];
    if (r.deprecated_in) vers.push("deprecated in CUDA " + r.deprecated_in);
    if (r.removed_in) vers.push("removed in CUDA " + r.removed_in);
    if (vers.length) box.appendChild(el("div", "muted", vers.join(", ")));
    box.appendChild(md("p", "msg", MSG[f[I.message]]));
    if (MSG[f[I.roiWhy]]) box.appendChild(el("p", "muted small roi-why", MSG[f[I.roiWhy]]));

    box.appendChild(el("h4", null, "Source"));
    var ctx = [], last = Math.min(f[I.endLine], f[I.line] + 12);
    for (var n = f[I.line] - 3; n <= last + 3; n++) {
      var t = srcLine(f[I.file], n);
      if (t === null) continue;
      ctx.push({ no: n, text: t, op: n >= f[I.line] && n <= f[I.endLine] ? ">" : " ", cls: n >= f[I.line] && n <= f[I.endLine] ? "hit" : "" });
    }
    if (ctx.length) box.appendChild(codeBlock(ctx));
    else box.appendChild(el("p", "muted", "(source not available)"));

    // related locations: where else the finding shows (the reads and binds of a texture reference reported at its
    // declaration), each with its line when the run read that file
    var rel = f[I.related] || [];
    if (rel.length) {
      box.appendChild(el("h4", null, "Related locations (" + rel.length + ")"));
      var rl = el("ul", "related");
      rel.forEach(function (x) {
        var li = el("li");
        li.appendChild(el("code", null, x[0] + ":" + x[1] + ":" + x[2]));
        li.appendChild(document.createTextNode(" "));
        Array.prototype.slice.call(md("span", null, MSG[x[3]]).childNodes).forEach(function (c) { li.appendChild(c); });
        if (x[4] !== null && x[4] !== undefined) li.appendChild(codeBlock([{ no: x[1], text: x[4] }]));
        rl.appendChild(li);
      });
      box.appendChild(rl);
    }

    var d = f[I.fix];
    box.appendChild(md("h4", null, d ? "Proposed fix (" + f[I.applicability] + "): " + MSG[f[I.fixTitle]] : "Fix"));
    if (d) {
      // d = [first line, old line count, new lines]: show common leading/trailing lines as context
      var first = d[0], oldL = [], newL = d[2], rows = [];
      for (var q = 0; q < d[1]; q++) { var ol = srcLine(f[I.file], first + q); oldL.push(ol === null ? "" : ol); }
      var pre = 0;
      while (pre < oldL.length && pre < newL.length && oldL[pre] === newL[pre]) pre++;
      var suf = 0;
      while (suf < oldL.length - pre && suf < newL.length - pre && oldL[oldL.length - 1 - suf] === newL[newL.length - 1 - suf]) suf++;
      for (q = 0; q < pre; q++) rows.push({ no: first + q, op: " ", text: oldL[q] });
      for (q = pre; q < oldL.length - suf; q++) rows.push({ no: first + q, op: "-", text: oldL[q], cls: "del" });
      for (q = pre; q < newL.length - suf; q++) rows.push({ no: first + q, op: "+", text: newL[q], cls: "add" });
      for (q = oldL.length - suf; q < oldL.length; q++) rows.push({ no: first + q, op: " ", text: oldL[q] });
      box.appendChild(codeBlock(rows));
      box.appendChild(md("p", "muted", f[I.applicability] === "safe" ? "Applied by `cudamigrate fix`." :
        f[I.applicability] === "display-only" ? "Suggested edit only: it changes behaviour (e.g. stream ordering), so `cudamigrate fix` never applies it; check the ordering and apply it by hand." :
        "Applied by `cudamigrate fix --unsafe-fixes`; review the change."));
    } else {
      box.appendChild(el("p", "muted", "No automatic fix: change the code by hand (see below)."));
    }

    [["What", r.what], ["Why", r.why], ["Fix safety", r.fix_safety]].forEach(function (p) {
      if (!p[1]) return;
      var para = el("p");
      para.appendChild(el("strong", null, p[0] + ": "));
      Array.prototype.slice.call(md("span", null, p[1]).childNodes).forEach(function (c) { para.appendChild(c); });
      box.appendChild(para);
    });
    if (r.example) { box.appendChild(el("h4", null, "Example")); box.appendChild(el("pre", "code", r.example)); }
    if (r.references.length) {
      box.appendChild(el("h4", null, "References"));
      var ul = el("ul");
      r.references.forEach(function (x) { ul.appendChild(refItem(x)); });
      box.appendChild(ul);
    }
    box.appendChild(el("h4", null, "Suppress"));
    var sup = el("p");
    sup.appendChild(document.createTextNode("Add to the line (or the line above): "));
    sup.appendChild(el("code", null, "// cudamigrate: ignore[" + r.id + "]"));
    sup.appendChild(document.createTextNode(", or record it in a baseline: "));
    sup.appendChild(el("code", null, "cudamigrate scan --write-baseline cudamigrate-baseline.json"));
    box.appendChild(sup);
    box.appendChild(el("div", "muted small", "fingerprint " + f[I.fingerprint]));
    return box;
  }

  // Chart labels end before their bar whatever the font: shortened (full text in the bar's tooltip) until
  // the rendered width fits the label column. data-chart-overlaps counts boxes that still cross (tests read it).
  var LABEL_MAX = 192;
  function fitLabels() {
    Array.prototype.forEach.call(document.querySelectorAll(".chart svg text.lbl"), function (t) {
      if (!t.getComputedTextLength) return;
      var s = t.textContent;
      while (s.length > 1 && t.getComputedTextLength() > LABEL_MAX) {
        s = s.replace(/…$/, "").slice(0, -1);
        t.textContent = s + "…";
      }
    });
    var n = 0;
    Array.prototype.forEach.call(document.querySelectorAll(".chart svg"), function (svg) {
      var b = Array.prototype.map.call(svg.querySelectorAll("text, rect"), function (e) { return e.getBoundingClientRect(); })
        .filter(function (r) { return r.width > 0 && r.height > 0; });
      for (var i = 0; i < b.length; i++) for (var j = i + 1; j < b.length; j++) {
        if (b[i].left < b[j].right - 0.5 && b[j].left < b[i].right - 0.5 && b[i].top < b[j].bottom - 0.5 && b[j].top < b[i].bottom - 0.5) n++;
      }
    });
    body.setAttribute("data-chart-overlaps", String(n));
  }

  var current = [];
  function render() {
    var t = performance.now();
    current = selected();
    var pages = Math.max(1, Math.ceil(current.length / PAGE));
    if (state.page >= pages) state.page = pages - 1;
    var tb = document.getElementById("rows");
    clear(tb);
    var start = state.page * PAGE, end = Math.min(current.length, start + PAGE);
    for (var k = start; k < end; k++) {
      var i = current[k], f = F[i], r = ruleOf(f);
      var tr = el("tr", "row sev-" + f[I.severity]);
      tr.setAttribute("data-index", String(i));
      tr.setAttribute("data-rule", r.id);
      tr.setAttribute("data-roi", String(f[I.roi]));
      tr.tabIndex = 0;
      tr.setAttribute("data-impact", f[I.impact]);
      var roiCell = el("td", "num", Math.round(f[I.roi] * 10) / 10);
      roiCell.title = MSG[f[I.roiWhy]] || "";
      tr.appendChild(roiCell);
      tr.appendChild(el("td", "rule", r.id));
      tr.appendChild(el("td", null, r.family));
      tr.appendChild(el("td", "sev", f[I.severity]));
      tr.appendChild(el("td", "app app-" + f[I.applicability], f[I.applicability]));
      tr.appendChild(el("td", "loc", FILES[f[I.file]] + ":" + f[I.line] + ":" + f[I.col]));
      tr.appendChild(md("td", "message", MSG[f[I.message]]));
      tr.appendChild(el("td", "num", f[I.effortMinutes]));
      tb.appendChild(tr);
      if (open[i]) {
        var dr = el("tr", "detail"), td = el("td");
        td.colSpan = 8;
        td.appendChild(details(i));
        dr.appendChild(td);
        tb.appendChild(dr);
      }
    }
    document.getElementById("count").textContent = current.length === F.length
      ? F.length + " findings" : current.length + " of " + F.length + " findings match";
    document.getElementById("pageinfo").textContent = current.length
      ? "rows " + (start + 1) + "–" + end + ", page " + (state.page + 1) + " of " + pages : "no findings match";
    document.getElementById("prev").disabled = state.page === 0;
    document.getElementById("next").disabled = state.page >= pages - 1;
    ["rule", "impact", "family", "severity", "applicability"].forEach(function (k) { document.getElementById("f-" + k).value = state[k]; });
    if (document.activeElement !== document.getElementById("f-file")) document.getElementById("f-file").value = state.file;
    if (document.activeElement !== document.getElementById("f-q")) document.getElementById("f-q").value = state.q;
    Array.prototype.forEach.call(document.querySelectorAll("th[data-sort]"), function (th) {
      var s = th.getAttribute("data-sort");
      th.setAttribute("aria-sort", s === state.sort ? (state.dir > 0 ? "ascending" : "descending") : "none");
    });
    Array.prototype.forEach.call(document.querySelectorAll("a.bar[data-filter]"), function (a) {
      var on = state[a.getAttribute("data-filter")] === a.getAttribute("data-value");
      if (on) a.classList.add("active"); else a.classList.remove("active");
    });
    body.setAttribute("data-shown", String(current.length));
    body.setAttribute("data-rows", String(end - start));
    body.setAttribute("data-table-ms", (performance.now() - t).toFixed(1));
  }
  function update() { writeHash(); render(); }

  try {
    fillSelect("f-rule", R.map(function (r) { return r.id; }), R.map(function (r) { return r.id + " " + r.name; }));
    var fams = []; R.forEach(function (r) { if (fams.indexOf(r.family) < 0) fams.push(r.family); });
    fillSelect("f-family", fams.sort());
    ["rule", "impact", "family", "severity", "applicability"].forEach(function (k) {
      document.getElementById("f-" + k).addEventListener("change", function (e) { state[k] = e.target.value; state.page = 0; update(); });
    });
    var timer = null;
    ["file", "q"].forEach(function (k) {
      document.getElementById("f-" + k).addEventListener("input", function (e) {
        clearTimeout(timer);
        timer = setTimeout(function () { state[k] = e.target.value; state.page = 0; update(); }, 150);
      });
    });
    document.getElementById("reset").addEventListener("click", function () {
      state = { rule: "", impact: "", family: "", severity: "", applicability: "", file: "", q: "", sort: "plan", dir: -1, page: 0 };
      update();
    });
    document.getElementById("prev").addEventListener("click", function () { state.page--; update(); });
    document.getElementById("next").addEventListener("click", function () { state.page++; update(); });
    Array.prototype.forEach.call(document.querySelectorAll("th[data-sort]"), function (th) {
      th.addEventListener("click", function () {
        var s = th.getAttribute("data-sort");
        if (state.sort === s) state.dir = -state.dir;
        else { state.sort = s; state.dir = (s === "roi" || s === "effort") ? -1 : 1; }
        state.page = 0;
        update();
      });
    });
    function toggle(ev) {
      var tr = ev.target.closest ? ev.target.closest("tr.row") : null;
      if (!tr) return;
      var i = tr.getAttribute("data-index");
      if (open[i]) delete open[i]; else open[i] = true;
      render();
    }
    document.getElementById("rows").addEventListener("click", toggle);
    document.getElementById("rows").addEventListener("keydown", function (ev) { if (ev.key === "Enter") toggle(ev); });
    // chart bars and plan rules are links (#rule=CM101): the hash filters the table, then the table is shown
    window.addEventListener("hashchange", function () {
      readHash(); render();
      var t = document.getElementById("findings");
      if (t.scrollIntoView) t.scrollIntoView();
    });
    fitLabels();
    // where the plan sits on the first screen (tests of the first view read these)
    var plan = document.getElementById("plan"), step = document.querySelector("#plan-steps li, #plan p");
    if (plan && plan.getBoundingClientRect) {
      body.setAttribute("data-plan-top", plan.getBoundingClientRect().top.toFixed(0));
      if (step) body.setAttribute("data-plan-first-bottom", step.getBoundingClientRect().bottom.toFixed(0));
      body.setAttribute("data-viewport", window.innerWidth + "x" + window.innerHeight);
    }
    readHash();
    render();
    if (/(^#|&)open=1(&|$)/.test(location.hash)) {  // `#open=1` opens the first row (screenshots, tests)
      var first = document.querySelector("tr.row");
      if (first) { open[first.getAttribute("data-index")] = true; render(); }
    }
  } catch (e) {
    fail(e && e.stack ? e.stack : e);
  }
  body.setAttribute("data-script-ms", (performance.now() - T0).toFixed(1));
  body.setAttribute("data-render-ms", performance.now().toFixed(1));
  body.setAttribute("data-ready", "1");
})();
