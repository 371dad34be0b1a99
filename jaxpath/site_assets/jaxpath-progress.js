/* The JAX path: "Your progress: k/N chapters" on the landing page.
 * A learner marks track chapters done with the checkboxes next to them; the marks are kept in this
 * browser's localStorage under one key per course, so they survive reloads and later visits.
 * Plain JavaScript, no library, nothing fetched. */
(function () {
  "use strict";

  function storageKey(course) {
    return "jaxpath-progress:" + course;
  }

  function load(key) {
    try {
      var raw = window.localStorage.getItem(key);
      var list = raw ? JSON.parse(raw) : [];
      return Array.isArray(list) ? list.map(String) : [];
    } catch (e) {
      return null; // storage unavailable (private mode, blocked for file:// pages) or unreadable
    }
  }

  function save(key, done) {
    try {
      window.localStorage.setItem(key, JSON.stringify(done));
      return true;
    } catch (e) {
      return false;
    }
  }

  function init() {
    var counter = document.querySelector(".jp-progress");
    var boxes = Array.prototype.slice.call(document.querySelectorAll("input.jp-done[data-track]"));
    if (!counter || boxes.length === 0) {
      return; // not the landing page
    }
    var key = storageKey(counter.getAttribute("data-course") || "course");
    var count = counter.querySelector(".jp-progress-count");
    var note = counter.querySelector(".jp-progress-note");
    var reset = counter.querySelector(".jp-progress-reset");
    var tracks = boxes.map(function (b) { return b.getAttribute("data-track"); });
    var stored = load(key);
    if (stored === null && note) {
      note.textContent = " (this browser does not let the page keep your marks)";
    }
    var done = (stored || []).filter(function (t) { return tracks.indexOf(t) >= 0; });

    function render() {
      boxes.forEach(function (b) {
        var on = done.indexOf(b.getAttribute("data-track")) >= 0;
        b.checked = on;
        var label = b.closest("label");
        if (label) { label.classList.toggle("jp-is-done", on); }
      });
      count.textContent = String(done.length);
    }

    boxes.forEach(function (b) {
      b.addEventListener("change", function () {
        var t = b.getAttribute("data-track");
        done = done.filter(function (x) { return x !== t; });
        if (b.checked) { done.push(t); }
        done.sort(function (a, c) { return Number(a) - Number(c); });
        if (!save(key, done) && note) {
          note.textContent = " (not saved: this browser does not let the page keep your marks)";
        }
        render();
      });
    });
    if (reset) {
      reset.addEventListener("click", function () {
        done = [];
        save(key, done);
        render();
      });
    }
    render();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
