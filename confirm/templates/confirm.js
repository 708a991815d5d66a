// The confirm page's one script: a countdown to the claims' expiry, and the passkey request
// over the challenge this program computed from the claims bytes. For a calm change the request
// starts once when the page opens (the person chose Approve to come here), with the change on
// screen behind the browser's passkey prompt; for a disruptive one (data-ask="click") only the
// button, which names the rooms, asks. The button asks again after a refusal. The assertion
// goes back by the form, to the approval page's origin the program put in it; this script
// decides nothing.
"use strict";

const b64u = (buffer) => btoa(String.fromCharCode(...new Uint8Array(buffer)))
  .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const fromB64u = (text) =>
  Uint8Array.from(atob(text.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));

window.addEventListener("DOMContentLoaded", () => {
  const expiry = document.getElementById("expiry");
  const form = document.getElementById("confirm-form");
  const button = document.getElementById("passkey");
  if (expiry) {
    const until = Number(expiry.dataset.expires) * 1000;
    const base = expiry.textContent;
    const tick = () => {
      const left = Math.max(0, Math.floor((until - Date.now()) / 1000));
      expiry.textContent = base + " (" + Math.floor(left / 60) + ":" +
        String(left % 60).padStart(2, "0") + ")";
      if (left === 0 && button) { button.disabled = true; }
    };
    tick();
    setInterval(tick, 1000);
  }
  if (!form || !button) { return; }
  const status = document.getElementById("passkey-status");
  const ask = async () => {
    button.disabled = true;
    try {
      const answer = await navigator.credentials.get({ publicKey: {
        rpId: "localhost",
        challenge: fromB64u(form.dataset.challenge),
        userVerification: "required",
        timeout: 120000,
      }});
      form.elements.credential_id.value = b64u(answer.rawId);
      form.elements.authenticator_data.value = b64u(answer.response.authenticatorData);
      form.elements.client_data_json.value = b64u(answer.response.clientDataJSON);
      form.elements.signature.value = b64u(answer.response.signature);
      form.submit();
    } catch (e) {
      status.textContent = form.dataset.cancelled;
      button.disabled = false;
    }
  };
  button.addEventListener("click", ask);
  if (form.dataset.ask === "load") { ask(); }
});
