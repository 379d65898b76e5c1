// Live pages: the server names in <main data-watch> the path whose changes concern the page;
// on each `change` event the page fetches its content again (the X-Rzk-Fragment request
// header) and replaces <main>'s inside. Without JavaScript every page is whole and static.
// On an election's page it also keeps, while the page is open, a timeline of the terms it saw:
// each leader with its token and when the page first saw it (in <ol id="terms">, as text).
(function () {
  "use strict";
  var main = document.getElementById("main");
  var badge = document.getElementById("live");
  var path = main && main.getAttribute("data-watch");
  if (!path || !window.EventSource || !window.fetch) { return; }
  var busy = false, again = false, lastTerm = null;
  function noteTerm() {
    var list = document.getElementById("terms");
    var leader = main.querySelector("strong.leader");
    var token = main.querySelector("table.members tr.holding td:nth-child(4)");
    if (!list || !leader || !token) { return; }
    var term = leader.textContent + " (token " + token.textContent + ")";
    if (term === lastTerm) { return; }
    lastTerm = term;
    var item = document.createElement("li");
    item.textContent = new Date().toISOString().slice(11, 23) + " " + term;
    list.insertBefore(item, list.firstChild);
    while (list.children.length > 50) { list.removeChild(list.lastChild); }
  }
  function mark(text, on) { badge.textContent = text; badge.className = on ? "on" : ""; }
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(window.location.href, { headers: { "X-Rzk-Fragment": "1" }, credentials: "same-origin" })
      .then(function (r) { return r.text().then(function (t) { return [r.status, t]; }); })
      .then(function (st) {
        main.innerHTML = st[1];
        mark(st[0] === 200 ? "live" : "live (" + st[0] + ")", true);
        noteTerm();
      })
      .catch(function () { mark("disconnected", false); })
      .then(function () { busy = false; if (again) { again = false; refresh(); } });
  }
  noteTerm();
  var events = new EventSource("events?path=" + encodeURIComponent(path));
  events.addEventListener("ready", function () { mark("live", true); });
  events.addEventListener("change", refresh);
  events.onerror = function () { mark("reconnecting…", false); };
})();
