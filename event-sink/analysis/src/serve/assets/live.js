// bench-analysis serve: live updates. The page names what it follows in
// <body data-live="QUERY"> (the filters of /api/live); the body's data-live-state
// (open, error) and data-live-events (events received) say how it goes. On each event the page
// fetches itself again and swaps in its <main>, so everything shown is the server's
// escaped HTML. Shortly after the event and again later, since the sink stores events
// a moment after they are published. Without this script the pages read the same,
// just not live.
// A section computed ahead and shown stale while its fresh answer is computed
// (data-stale="true", "Updating: ...") has the page fetched again every 2 s until it is
// fresh, live updates on or off.
(function () {
  "use strict";
  var body = document.body;
  var query = body.getAttribute("data-live");
  var status = document.getElementById("live-status");
  if (!window.fetch || !window.DOMParser) {
    return;
  }
  var quick = null;
  var received = 0;
  var trailing = [];
  var updating = null;

  function watchStale() {
    if (updating === null && document.querySelector("main [data-stale='true']")) {
      updating = setTimeout(function () { updating = null; refresh(); }, 2000);
    }
  }

  function refresh() {
    fetch(window.location.href, { credentials: "same-origin", cache: "no-store" })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (text) {
        if (text === null) { return; }
        var fresh = new DOMParser().parseFromString(text, "text/html").querySelector("main");
        var current = document.querySelector("main");
        if (fresh && current) {
          current.replaceWith(document.importNode(fresh, true));
        }
        watchStale();
      })
      .catch(function () {});
  }

  watchStale();
  if (query === null || !window.EventSource) {
    return;
  }

  function schedule() {
    if (quick === null) {
      quick = setTimeout(function () { quick = null; refresh(); }, 250);
    }
    trailing.forEach(clearTimeout);
    trailing = [1200, 3000].map(function (ms) { return setTimeout(refresh, ms); });
  }

  var source = new EventSource("/api/live" + (query ? "?" + query : ""));
  source.onopen = function () {
    body.setAttribute("data-live-state", "open");
    if (status) { status.textContent = "live updates on"; }
  };
  source.onmessage = function () {
    received += 1;
    body.setAttribute("data-live-events", String(received));
    schedule();
  };
  source.onerror = function () {
    body.setAttribute("data-live-state", "error");
    if (status) { status.textContent = "live updates interrupted, reconnecting"; }
  };
})();
