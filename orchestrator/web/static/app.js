// orchestrator serve: live updates without reloading the page, fed by server-sent events.
// The server sends an event whenever the store has new events for what this page shows; the
// page then fetches itself again and swaps each live region whose HTML changed, except one a
// person is typing in (an answer form keeps its text).
(function () {
  "use strict";
  // Behaviour kept out of the HTML, so the page's content security policy allows no inline script.
  document.addEventListener("change", function (e) {
    if (e.target.matches && e.target.matches("select[data-autosubmit]")) { e.target.form.submit(); }
  });
  document.addEventListener("submit", function (e) {
    var text = e.target.getAttribute && e.target.getAttribute("data-confirm");
    if (text && !window.confirm(text)) { e.preventDefault(); }
  });
  var body = document.body;
  var feed = body.getAttribute("data-feed");
  if (!feed || !window.EventSource) { return; }
  var indicator = document.getElementById("live");
  var busy = false, again = false;

  function swap(html) {
    var next = new DOMParser().parseFromString(html, "text/html");
    document.querySelectorAll("[data-live]").forEach(function (region) {
      var name = region.getAttribute("data-live");
      var fresh = next.querySelector('[data-live="' + name + '"]');
      if (!fresh || fresh.innerHTML === region.innerHTML) { return; }
      if (region.contains(document.activeElement) && document.activeElement !== document.body) {
        return;  // someone is typing here: leave it alone
      }
      var open = {};
      region.querySelectorAll("details[id]").forEach(function (d) { open[d.id] = d.open; });
      region.innerHTML = fresh.innerHTML;
      region.querySelectorAll("details[id]").forEach(function (d) {
        if (d.id in open) { d.open = open[d.id]; }
      });
    });
    var seq = next.body.getAttribute("data-seq");
    if (seq) { body.setAttribute("data-seq", seq); }
    body.setAttribute("data-updates", String(Number(body.getAttribute("data-updates") || 0) + 1));
  }

  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(window.location.href, { headers: { "X-Orchestrator-Fragment": "1" },
                                  credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) { if (html) { swap(html); } })
      .catch(function () {})
      .then(function () { busy = false; if (again) { again = false; refresh(); } });
  }

  var source = new EventSource(feed, { withCredentials: true });
  source.addEventListener("change", function (e) {
    var data = {};
    try { data = JSON.parse(e.data); } catch (err) {}
    if (String(data.seq) !== body.getAttribute("data-seq")) { refresh(); }
  });
  source.onopen = function () { if (indicator) { indicator.className = "live on"; indicator.textContent = "live"; } };
  source.onerror = function () { if (indicator) { indicator.className = "live"; indicator.textContent = "reconnecting…"; } };
})();
