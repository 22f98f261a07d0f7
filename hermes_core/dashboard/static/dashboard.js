// hermes dashboard: actions and the login form as JSON requests, each with the page's CSRF token.
(function () {
  "use strict";
  var meta = document.querySelector('meta[name="csrf-token"]');
  var csrf = meta ? meta.getAttribute("content") : "";

  function flash(text, bad) {
    var box = document.getElementById("flash");
    if (!box) { return; }
    box.textContent = text;
    box.className = bad ? "bad" : "";
    box.hidden = false;
  }

  function post(url, body) {
    return fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify(body || {})
    }).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (data) {
        return { ok: response.ok, status: response.status, data: data };
      });
    });
  }

  window.__HERMES_DASHBOARD__ = { csrf: csrf, post: post, flash: flash };

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form.matches("form[data-action]")) {
      event.preventDefault();
      var body = {};
      new FormData(form).forEach(function (value, key) { body[key] = value; });
      post(form.getAttribute("data-action"), body).then(function (answer) {
        var data = answer.data || {};
        if (data.consent) { window.location.assign(data.consent); return; }  // asks before enabling
        var message = data.message || data.error || ("status " + answer.status);
        sessionStorage.setItem("hermes-flash", JSON.stringify({ text: message, bad: !answer.ok }));
        if (answer.ok && data.location) { window.location.assign(data.location); }
        else if (answer.ok) { window.location.reload(); } else { flash(message, true); }
      });
    } else if (form.matches("form[data-login]")) {
      event.preventDefault();
      var fields = {};
      new FormData(form).forEach(function (value, key) { fields[key] = value; });
      post("/auth/password-login", fields).then(function (answer) {
        if (answer.ok) { window.location.assign(form.getAttribute("data-next") || "/"); }
        else { flash((answer.data && answer.data.error) || "login failed", true); }
      });
    }
  });

  var kept = sessionStorage.getItem("hermes-flash");
  if (kept) {
    sessionStorage.removeItem("hermes-flash");
    try { var shown = JSON.parse(kept); flash(shown.text, shown.bad); } catch (e) { /* ignore */ }
  }

  // Hermes' plugin SDK, the part a server-rendered dashboard can offer: register a page's
  // renderer, and fetch the plugin's own API with the session and CSRF token.
  var registered = {};
  window.__HERMES_PLUGINS__ = {
    register: function (name, render) {
      registered[name] = render;
      var root = document.querySelector('[data-plugin-root="' + name + '"]');
      if (root && typeof render === "function") { render(root, window.__HERMES_PLUGIN_SDK__); }
    },
    registerSlot: function () { /* slots are not offered by this dashboard */ }
  };
  window.__HERMES_PLUGIN_SDK__ = {
    fetchJSON: function (url, options) {
      options = options || {};
      var headers = Object.assign({ "X-CSRF-Token": csrf }, options.headers || {});
      if (options.body && typeof options.body !== "string") {
        headers["Content-Type"] = "application/json";
        options.body = JSON.stringify(options.body);
      }
      return fetch(url, Object.assign({}, options, { headers: headers, credentials: "same-origin" }))
        .then(function (response) { return response.json(); });
    }
  };
})();
