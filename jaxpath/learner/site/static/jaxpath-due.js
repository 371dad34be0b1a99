/* The JAX path: a part's due date on the class site's chapter pages, in the reader's own time zone.
 *
 * The page carries the instant (<time class="jp-due-time" datetime="...Z">) and, as its text, the date in the
 * course's zone and in UTC (what shows without script). Here the text becomes the same instant in the zone the
 * browser runs in, which is named beside it; the course's own words stay in the title. Nothing is fetched. */
(function () {
  "use strict";

  function show() {
    var nodes = document.querySelectorAll("time.jp-due-time[datetime]");
    for (var i = 0; i < nodes.length; i++) {
      var node = nodes[i];
      var when = new Date(node.getAttribute("datetime"));
      if (isNaN(when.getTime())) {
        continue;
      }
      var zone = "";
      try {
        zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "";
      } catch (e) {
        zone = "";
      }
      node.textContent = when.toLocaleString(undefined, {
        weekday: "long", day: "numeric", month: "long", year: "numeric", hour: "2-digit", minute: "2-digit"
      });
      var label = node.parentNode.parentNode.querySelector(".jp-due-zone");
      if (label) {
        label.textContent = "(your time" + (zone ? ", " + zone : "") + "; the course gives it as " + node.title + ")";
      }
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", show);
  } else {
    show();
  }
})();
