// Enrolment: asks the browser for a new passkey bound to RP ID `localhost` (user verification
// required, Ed25519 or ES256) and posts its credential ID, algorithm and public key (SPKI, from
// getPublicKey(), so nothing parses CBOR). The page then shows the line an administrator
// installs on the executor. The challenge is not checked by anyone: enrolment is trusted by the
// fingerprint a person compares, not by attestation.
(function () {
  "use strict";
  var form = document.getElementById("enrol-form");
  if (!form) { return; }
  var status = document.getElementById("enrol-status");
  function say(key) {
    status.textContent = form.getAttribute("data-" + key) || key;
    status.hidden = false;
  }
  function b64(buf) {
    var bytes = new Uint8Array(buf);
    var text = "";
    for (var i = 0; i < bytes.length; i++) { text += String.fromCharCode(bytes[i]); }
    return window.btoa(text);
  }
  function b64u(buf) {
    return b64(buf).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }
  function fromB64u(text) {
    var plain = window.atob(text.replace(/-/g, "+").replace(/_/g, "/"));
    var out = new Uint8Array(plain.length);
    for (var i = 0; i < plain.length; i++) { out[i] = plain.charCodeAt(i); }
    return out;
  }
  if (window.location.hostname !== "localhost") { say("localhost"); }
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    if (!window.PublicKeyCredential || !navigator.credentials) { say("unsupported"); return; }
    var name = document.getElementById("passkey-name").value.trim();
    if (!name) { say("noname"); return; }
    var exclude = (form.getAttribute("data-exclude") || "").split(" ").filter(Boolean)
      .map(function (id) { return { type: "public-key", id: fromB64u(id) }; });
    var user = new Uint8Array(16);
    window.crypto.getRandomValues(user);
    var challenge = new Uint8Array(32);
    window.crypto.getRandomValues(challenge);
    navigator.credentials.create({ publicKey: {
      rp: { id: "localhost", name: "Fleetwatch" },
      user: { id: user, name: name, displayName: name },
      challenge: challenge,
      pubKeyCredParams: [{ type: "public-key", alg: -8 }, { type: "public-key", alg: -7 }],
      authenticatorSelection: { userVerification: "required", residentKey: "preferred" },
      attestation: "none",
      timeout: 120000,
      excludeCredentials: exclude
    } }).then(function (credential) {
      var response = credential.response;
      var spki = response.getPublicKey ? response.getPublicKey() : null;
      if (!spki) { say("unsupported"); return; }
      form.elements.credential_id.value = b64u(credential.rawId);
      form.elements.algorithm.value = String(response.getPublicKeyAlgorithm());
      form.elements.spki.value = b64(spki);
      form.submit();
    }, function () { say("cancelled"); });
  });
})();
