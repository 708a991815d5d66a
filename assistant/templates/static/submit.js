// Sends the page's one `form[data-submit]` at once: the hand-off to the confirm page, or the
// shell's request for the view it stands for (with this tab's value, which tab.js, loaded
// first, has added). Without this script the form's button does it.
(function () {
  "use strict";
  var form = document.querySelector("form[data-submit]");
  if (form) { form.submit(); }
})();
