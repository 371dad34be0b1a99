/* The JAX path: progress on the landing page, and the local JupyterLab link on chapter pages.
 *
 * Served by `jaxpath serve`, the site answers _jaxpath/progress.json: the track chapters the learner's work
 * folder has earned (core exercises passing `jaxpath check`). The landing page shows them ("Earned: k/12")
 * with each chapter's state and next exercise. Self-marks are separate and always available: the checkboxes
 * keep a learner's own marks in this browser's localStorage (one key per course), labelled self-marked.
 * Opened from the file system there is no progress file, and only the self-marks show.
 * Plain JavaScript, no library, nothing fetched from elsewhere. */
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

  function siteRoot() {
    var root = document.documentElement.getAttribute("data-content_root");
    return root === null ? "" : root;
  }

  function fetchProgress(callback) {
    if (window.location.protocol !== "http:" && window.location.protocol !== "https:") {
      return; // a file: page has no server to ask
    }
    var req = new XMLHttpRequest();
    req.open("GET", siteRoot() + "_jaxpath/progress.json");
    req.onload = function () {
      if (req.status !== 200) { return; } // a plain file server: no earned progress
      try { callback(JSON.parse(req.responseText)); } catch (e) { /* not ours */ }
    };
    req.send();
  }

  function showEarned(counter, data) {
    var text = counter.querySelector(".jp-earned-text");
    if (!text) { return; }
    counter.querySelector(".jp-earned-count").textContent = String(data.earned);
    var folder = String(data.work).replace(/[\\/]+$/, "").split(/[\\/]/).pop();
    counter.querySelector(".jp-earned-source").textContent = "(checked by jaxpath check in your folder " + folder + ")";
    text.hidden = false;
    counter.classList.add("jp-served");
    data.tracks.forEach(function (t) {
      var el = document.querySelector(".jp-status[data-track='" + t.number + "']");
      if (!el) { return; }
      el.className = "jp-status jp-state-" + t.state.replace(/ /g, "-");
      el.setAttribute("data-state", t.state);
      var line = {"earned": "✓ Earned", "in progress": "◐ In progress", "not started": "Not started"}[t.state];
      line += " · core exercises passing: " + t.core_done + "/" + t.core_total;
      if (t.next) { line += " · next: " + t.next.label + ", " + t.next.title; }
      el.textContent = line;
      el.hidden = false;
    });
  }

  function initLanding(counter) {
    var boxes = Array.prototype.slice.call(document.querySelectorAll("input.jp-done[data-track]"));
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
    fetchProgress(function (data) {
      showEarned(counter, data);
      counter.setAttribute("data-loaded", "true");
    });
  }

  function initChapter(slot) {
    fetchProgress(function (data) {
      if (!data.lab_url) { return; }
      var a = document.createElement("a");
      a.href = data.lab_url + "/lab/tree/" + slot.getAttribute("data-notebook");
      a.className = "jp-launch-local-link";
      a.textContent = "Open " + slot.getAttribute("data-notebook") + " in your JupyterLab";
      slot.appendChild(a);
      slot.hidden = false;
    });
  }

  function init() {
    var counter = document.querySelector(".jp-progress");
    if (counter) { initLanding(counter); }
    var slot = document.querySelector(".jp-launch-local[data-notebook]");
    if (slot) { initChapter(slot); }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
