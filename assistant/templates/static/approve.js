// The deciding button (Approve for a calm change, Confirm for a disruptive one) when the
// executor requires an operator's passkey: asks the browser for an assertion whose challenge is
// the digest of the exact claims this approval will send (computed by the server from the
// approval row), then posts it with the form. A cancelled or refused ceremony posts nothing, so
// nothing is consumed and the person can try again or deny.
(function () {
  "use strict";
  var form = document.querySelector("form[data-challenge]");
  if (!form) { return; }
  var status = document.getElementById("passkey-status");
  function say(key) {
    status.textContent = form.getAttribute("data-" + key) || key;
    status.hidden = false;
  }
  function b64u(buf) {
    var bytes = new Uint8Array(buf);
    var text = "";
    for (var i = 0; i < bytes.length; i++) { text += String.fromCharCode(bytes[i]); }
    return window.btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }
  function fromB64u(text) {
    var plain = window.atob(text.replace(/-/g, "+").replace(/_/g, "/"));
    var out = new Uint8Array(plain.length);
    for (var i = 0; i < plain.length; i++) { out[i] = plain.charCodeAt(i); }
    return out;
  }
  var busy = false;
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    if (busy) { return; }
    if (!window.PublicKeyCredential || !navigator.credentials) { say("unsupported"); return; }
    busy = true;
    say("asking");
    var allow = (form.getAttribute("data-allow") || "").split(" ").filter(Boolean)
      .map(function (id) { return { type: "public-key", id: fromB64u(id) }; });
    navigator.credentials.get({ publicKey: {
      rpId: "localhost",
      challenge: fromB64u(form.getAttribute("data-challenge")),
      allowCredentials: allow,
      userVerification: "required",
      timeout: 120000
    } }).then(function (assertion) {
      var r = assertion.response;
      form.elements.credential_id.value = b64u(assertion.rawId);
      form.elements.authenticator_data.value = b64u(r.authenticatorData);
      form.elements.client_data_json.value = b64u(r.clientDataJSON);
      form.elements.signature.value = b64u(r.signature);
      form.submit();
    }, function () {
      busy = false;
      say("cancelled");
    });
  });
})();
