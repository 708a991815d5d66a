// The enrolment page's one script: make a passkey for the values the program chose, prove it
// over the program's second challenge, and send both answers back, exactly as the browser
// returned them (base64url). The program checks everything; this script decides nothing.
"use strict";

const b64u = (buffer) => btoa(String.fromCharCode(...new Uint8Array(buffer)))
  .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const fromB64u = (text) =>
  Uint8Array.from(atob(text.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));

window.addEventListener("DOMContentLoaded", () => {
  const main = document.getElementById("enrol");
  const data = main.dataset;
  const button = document.getElementById("start");
  const status = document.getElementById("status");
  const say = (text, kind) => {
    status.textContent = text;
    status.className = kind || "";
  };
  if (!window.PublicKeyCredential || !navigator.credentials) {
    say(data.unsupported, "error");
    button.disabled = true;
    return;
  }
  button.addEventListener("click", async () => {
    button.disabled = true;
    say(data.working);
    let made;
    let proof;
    try {
      made = await navigator.credentials.create({ publicKey: {
        rp: { id: data.rp, name: "Fleetwatch" },
        user: { id: fromB64u(data.user), name: data.person, displayName: data.name },
        challenge: fromB64u(data.createChallenge),
        pubKeyCredParams: [{ type: "public-key", alg: -7 }, { type: "public-key", alg: -8 }],
        // Discoverable: the confirm page asks without a credential list, so a passkey the
        // authenticator does not keep could never approve.
        authenticatorSelection: {
          userVerification: "required", residentKey: "required", requireResidentKey: true,
        },
        extensions: { credProps: true },
        attestation: "none",
        excludeCredentials: (data.exclude ? data.exclude.split(" ") : [])
          .map((id) => ({ type: "public-key", id: fromB64u(id) })),
        timeout: 120000,
      }});
      const props = made.getClientExtensionResults().credProps;
      if (props && props.rk === false) {
        say(data.notDiscoverable, "error");
        button.disabled = false;
        return;
      }
      // The proof asks as the confirm page will: with no credential list, so only a passkey
      // the authenticator keeps can answer (the program checks it is the one just made).
      proof = await navigator.credentials.get({ publicKey: {
        rpId: data.rp,
        challenge: fromB64u(data.getChallenge),
        userVerification: "required",
        timeout: 120000,
      }});
    } catch (e) {
      say(data.cancelled + " (" + e.name + ")", "error");
      button.disabled = false;
      return;
    }
    const publicKey = made.response.getPublicKey();
    const body = {
      id: b64u(made.rawId),
      algorithm: made.response.getPublicKeyAlgorithm(),
      public_key: publicKey ? b64u(publicKey) : "",
      create_client_data: b64u(made.response.clientDataJSON),
      create_authenticator_data: b64u(made.response.getAuthenticatorData()),
      assertion_id: b64u(proof.rawId),
      authenticator_data: b64u(proof.response.authenticatorData),
      client_data: b64u(proof.response.clientDataJSON),
      signature: b64u(proof.response.signature),
    };
    try {
      const response = await fetch(location.pathname, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      const answer = await response.json();
      say(answer.message, answer.ok ? "ok" : "error");
    } catch (e) {
      say(data.cancelled + " (" + e.name + ")", "error");
    }
  });
});
