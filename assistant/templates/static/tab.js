// The per-tab value: 32 random bytes kept in sessionStorage, which (unlike a cookie) belongs to
// this page's origin, port included, and to this tab alone. Every form of the page carries it;
// the server binds it to the session at sign-in and refuses any later form without it, so a
// stolen session cookie is not enough to approve or deny anything.
(function () {
  "use strict";
  var KEY = "fleetwatch_tab";
  var value = null;
  try { value = window.sessionStorage.getItem(KEY); } catch (e) { value = null; }
  if (!value || !/^[0-9a-f]{64}$/.test(value)) {
    var bytes = new Uint8Array(32);
    window.crypto.getRandomValues(bytes);
    value = "";
    for (var i = 0; i < bytes.length; i++) {
      value += (bytes[i] < 16 ? "0" : "") + bytes[i].toString(16);
    }
    try { window.sessionStorage.setItem(KEY, value); } catch (e) { /* the server says so */ }
  }
  var forms = document.querySelectorAll("form");
  for (var f = 0; f < forms.length; f++) {
    if ((forms[f].getAttribute("method") || "").toLowerCase() !== "post") { continue; }
    var input = document.createElement("input");
    input.type = "hidden";
    input.name = "tab";
    input.value = value;
    forms[f].appendChild(input);
  }
})();
