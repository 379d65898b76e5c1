// Live pages: the server names in <main data-watch> the path whose changes concern the page;
// on each `change` event the page fetches its content again (the X-Rzk-Fragment request
// header) and replaces <main>'s inside. Without JavaScript every page is whole and static.
(function () {
  "use strict";
  var main = document.getElementById("main");
  var badge = document.getElementById("live");
  var path = main && main.getAttribute("data-watch");
  if (!path || !window.EventSource || !window.fetch) { return; }
  var busy = false, again = false;
  function mark(text, on) { badge.textContent = text; badge.className = on ? "on" : ""; }
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(window.location.href, { headers: { "X-Rzk-Fragment": "1" }, credentials: "same-origin" })
      .then(function (r) { return r.text().then(function (t) { return [r.status, t]; }); })
      .then(function (st) { main.innerHTML = st[1]; mark(st[0] === 200 ? "live" : "live (" + st[0] + ")", true); })
      .catch(function () { mark("disconnected", false); })
      .then(function () { busy = false; if (again) { again = false; refresh(); } });
  }
  var events = new EventSource("/events?path=" + encodeURIComponent(path));
  events.addEventListener("ready", function () { mark("live", true); });
  events.addEventListener("change", refresh);
  events.onerror = function () { mark("reconnecting…", false); };
})();
