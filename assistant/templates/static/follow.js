// The page follows what waits: every two seconds it asks this page what is pending (proposal
// numbers only, behind the session and this tab's value like every form), keeps the tab's
// title count current, and says when a new change waits, when the one shown was decided
// elsewhere or expired, or when it waits for a second person. It never swaps the card under
// the person's pointer: "Show" loads the current view when they choose. The page works
// without this script; a reload shows the same.
(function () {
  "use strict";
  var el = document.getElementById("follow");
  if (!el || !window.fetch || !window.URLSearchParams) { return; }
  var tab = null;
  try { tab = window.sessionStorage.getItem("fleetwatch_tab"); } catch (e) { tab = null; }
  if (!tab) { return; }
  var shown = el.getAttribute("data-shown") || "";
  var known = (el.getAttribute("data-pending") || "").split(",").filter(Boolean);
  var second = el.getAttribute("data-waiting") === "1";
  var news = document.getElementById("follow-news");
  var text = document.getElementById("follow-text");
  var show = document.getElementById("follow-show");
  var title = document.title.replace(/^\(\d+\) /, "");
  function say(line) {
    text.textContent = line;
    news.hidden = false;
  }
  show.addEventListener("click", function () {
    // The view the page shows on load: this tab's value posted to "/".
    var form = document.createElement("form");
    form.method = "post";
    form.action = "/";
    var input = document.createElement("input");
    input.type = "hidden";
    input.name = "tab";
    input.value = tab;
    form.appendChild(input);
    document.body.appendChild(form);
    form.submit();
  });
  function poll() {
    var body = new URLSearchParams();
    body.set("tab", tab);
    window.fetch("/waiting", { method: "POST", body: body, credentials: "same-origin" })
      .then(function (r) {
        if (r.status === 403) { throw new Error("signed out"); }
        return r.ok ? r.json() : null;
      })
      .then(function (w) {
        if (w) {
          var pending = w.pending.map(String);
          var waiting = w.waiting.map(String);
          document.title = (pending.length > 0 ? "(" + pending.length + ") " : "") + title;
          var fresh = pending.filter(function (id) { return known.indexOf(id) < 0; });
          if (shown && pending.indexOf(shown) < 0) {
            say(el.getAttribute("data-gone"));
          } else if (shown && !second && waiting.indexOf(shown) >= 0) {
            second = true;
            say(el.getAttribute("data-second"));
          } else if (fresh.length > 0) {
            say(el.getAttribute("data-new").replace("{n}", String(fresh.length)));
          }
        }
        window.setTimeout(poll, 2000);
      })
      .catch(function (e) {
        // Signed out (the session ended): stop asking. Otherwise try again.
        if (String(e && e.message) !== "signed out") { window.setTimeout(poll, 2000); }
      });
  }
  window.setTimeout(poll, 2000);
})();
