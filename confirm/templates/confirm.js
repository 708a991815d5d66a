// The confirm page's one script: a countdown to the claims' expiry, and the passkey request
// over the challenge this program computed from the claims bytes.
//
// Read before it asks (DESIGN §9): nothing is asked when the page opens, for any change. The one
// button, which names the change and its rooms, arrives disabled; it is enabled only once the
// page has been visible and focused for ARM_MS without a break, and then a fresh pointer or key
// event of the person's arrives. A click that lands in the first moment (meant for the page
// before) does nothing, and so does a press that began while the button was still disabled.
// Hidden or unfocused, the button is disabled again and the wait starts over. The assertion goes
// back by the form, to the approval page's origin the program put in it; this script decides
// nothing.
"use strict";

const ARM_MS = 1000;

const b64u = (buffer) => btoa(String.fromCharCode(...new Uint8Array(buffer)))
  .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const fromB64u = (text) =>
  Uint8Array.from(atob(text.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));

// Seconds left, as a person reads them: 4:59, 1:02:03, 3 d 01:02.
const left = (seconds) => {
  const two = (n) => String(n).padStart(2, "0");
  const d = Math.floor(seconds / 86400);
  const h = Math.floor((seconds % 86400) / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  if (d > 0) { return d + " d " + two(h) + ":" + two(m); }
  if (h > 0) { return h + ":" + two(m) + ":" + two(s); }
  return m + ":" + two(s);
};

window.addEventListener("DOMContentLoaded", () => {
  const expiry = document.getElementById("expiry");
  const form = document.getElementById("confirm-form");
  const button = document.getElementById("passkey");
  const wait = document.getElementById("passkey-wait");
  let expired = false;
  let asking = false;
  if (expiry) {
    const until = Number(expiry.dataset.expires) * 1000;
    const base = expiry.textContent;
    let timer = null;
    const tick = () => {
      const seconds = Math.max(0, Math.floor((until - Date.now()) / 1000));
      if (seconds === 0) {
        expired = true;
        expiry.textContent = expiry.dataset.expired;
        if (button) { button.disabled = true; button.hidden = true; }
        if (wait) { wait.hidden = true; }
        if (timer !== null) { clearInterval(timer); }
        return;
      }
      expiry.textContent = base + " (" + left(seconds) + ")";
    };
    tick();
    if (!expired) { timer = setInterval(tick, 1000); }
  }
  if (!form || !button || expired) { return; }
  const status = document.getElementById("passkey-status");

  // Since when the page has been visible and focused without a break (null: it is not).
  const seen = () => document.visibilityState === "visible" && document.hasFocus();
  let since = seen() ? performance.now() : null;
  const watch = () => {
    if (seen()) {
      if (since === null) { since = performance.now(); }
    } else {
      since = null;
      if (!asking) { button.disabled = true; }
    }
  };
  document.addEventListener("visibilitychange", watch);
  window.addEventListener("focus", watch);
  window.addEventListener("blur", watch);
  const fresh = (event) => {
    watch();
    if (!event.isTrusted || expired || asking || since === null) { return; }
    if (performance.now() - since >= ARM_MS) {
      button.disabled = false;
      if (wait) { wait.hidden = true; }
    }
  };
  // A press that began while the button was disabled does not become a click on it.
  let pressedWhileDisabled = false;
  window.addEventListener("pointerdown", (event) => {
    pressedWhileDisabled = button.disabled;
    fresh(event);
  }, true);
  window.addEventListener("pointermove", fresh, true);
  window.addEventListener("keydown", fresh, true);

  const ask = async () => {
    asking = true;
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
      asking = false;
      button.disabled = expired;
    }
  };
  button.addEventListener("click", (event) => {
    // Keyboard activation has detail 0 and no press before it.
    const pressed = event.detail > 0 && pressedWhileDisabled;
    if (!event.isTrusted || button.disabled || pressed || asking || expired) { return; }
    ask();
  });
});
