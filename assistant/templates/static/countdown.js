// The approval's expiry, counted down once a second. The page works without this script:
// the server-rendered sentence already says when the approval expires.
(function () {
  "use strict";
  var el = document.getElementById("expiry");
  if (!el) { return; }
  var remaining = parseInt(el.getAttribute("data-remaining"), 10);
  var label = el.getAttribute("data-label") || "";
  if (!(remaining >= 0)) { return; }
  var end = Date.now() + remaining * 1000;
  function tick() {
    var left = Math.max(0, Math.round((end - Date.now()) / 1000));
    var m = Math.floor(left / 60);
    var s = left % 60;
    el.textContent = label + " " + m + ":" + (s < 10 ? "0" : "") + s;
    if (left > 0) { window.setTimeout(tick, 1000); }
  }
  tick();
})();
