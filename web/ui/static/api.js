// api.js: fetch with the stored bearer key, and the one API-key dialog that
// every 401 shares.

const KEY_STORAGE = "elysia.apiKey";

export function getKey() {
  try {
    return localStorage.getItem(KEY_STORAGE) || "";
  } catch {
    return "";
  }
}

export function setKey(key) {
  try {
    if (key) localStorage.setItem(KEY_STORAGE, key);
    else localStorage.removeItem(KEY_STORAGE);
  } catch {
    // Private mode without storage: the key lives as long as the page.
  }
  memoryKey = key;
}

let memoryKey = "";
function currentKey() {
  return getKey() || memoryKey;
}

export function authHeaders() {
  const key = currentKey();
  return key ? { Authorization: "Bearer " + key } : {};
}

// The dialog is shown at most once at a time: concurrent 401s (the tree
// poll, the server poll, a query) all wait for the same answer.
let pendingPrompt = null;
// After the user cancels, background polls stop asking until the user opens
// the dialog again from the key button or sends a query.
let dismissed = false;

export function promptForKey(message) {
  if (pendingPrompt) return pendingPrompt;
  const dialog = document.getElementById("api-key-dialog");
  const form = document.getElementById("api-key-form");
  const input = document.getElementById("api-key");
  const cancel = document.getElementById("api-key-cancel");
  const text = document.getElementById("api-key-message");
  if (message) text.textContent = message;
  input.value = currentKey();
  pendingPrompt = new Promise((resolve) => {
    const done = (key) => {
      form.removeEventListener("submit", onSubmit);
      cancel.removeEventListener("click", onCancel);
      dialog.removeEventListener("cancel", onCancel);
      if (dialog.open) dialog.close();
      pendingPrompt = null;
      resolve(key);
    };
    const onSubmit = (ev) => {
      ev.preventDefault();
      const key = input.value.trim();
      if (!key) {
        input.focus();
        return;
      }
      setKey(key);
      dismissed = false;
      done(key);
      // Listeners refresh what failed without a key and reopen the WebSocket.
      window.dispatchEvent(new CustomEvent("elysia-key"));
    };
    const onCancel = (ev) => {
      ev.preventDefault();
      dismissed = true;
      done(null);
    };
    form.addEventListener("submit", onSubmit);
    cancel.addEventListener("click", onCancel);
    dialog.addEventListener("cancel", onCancel);
    if (typeof dialog.showModal === "function") dialog.showModal();
    else dialog.setAttribute("open", "");
    input.focus();
    input.select();
  });
  return pendingPrompt;
}

// api performs a request against the service. It adds the bearer header,
// and on 401 asks for a key (once, shared) and retries. interactive=false
// (background polls) does not reopen a dialog the user dismissed.
export async function api(path, { method = "GET", body, headers = {}, signal, accept = "application/json", interactive = true } = {}) {
  let res;
  for (let attempt = 0; attempt < 3; attempt++) {
    const init = {
      method,
      headers: { Accept: accept, ...authHeaders(), ...headers },
      signal,
      cache: "no-store",
    };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = typeof body === "string" ? body : JSON.stringify(body);
    }
    res = await fetch(path, init);
    if (res.status !== 401) return res;
    if (!interactive && dismissed) return res;
    const message = currentKey()
      ? "The server rejected the stored API key. Enter another one."
      : "This server needs an API key. It is kept in this browser only.";
    const key = await promptForKey(message);
    if (!key) return res;
  }
  return res;
}

// apiJSON is api plus a defensive JSON decode: it never throws on a bad
// body, and it returns {ok, status, data, error}.
export async function apiJSON(path, opts = {}) {
  let res;
  try {
    res = await api(path, opts);
  } catch (err) {
    if (err && err.name === "AbortError") throw err;
    return { ok: false, status: 0, data: null, error: "network error: " + (err && err.message ? err.message : err) };
  }
  return readJSON(res);
}

// readJSON decodes a response as apiJSON does.
export async function readJSON(res) {
  let data = null;
  let text = "";
  try {
    text = await res.text();
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  let error = "";
  if (data && typeof data.error === "string") error = data.error;
  else if (data && data.error && typeof data.error.message === "string") error = data.error.message;
  if (!res.ok && !error) error = `${res.status} ${res.statusText || ""}`.trim() + (text && !data ? ": " + text.slice(0, 200) : "");
  return { ok: res.ok && !error, status: res.status, data, error };
}

export function resetDismissed() {
  dismissed = false;
}
