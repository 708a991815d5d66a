// Hands the tab to the confirm page at once: the form (the claims and the return token, nothing
// else) is what the Continue button would send. Without this script the button does it.
(function () {
  "use strict";
  var form = document.getElementById("handoff");
  if (form) { form.submit(); }
})();
