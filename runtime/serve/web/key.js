// key.js: the API key of both pages (strata serve --api-key): asked once in a
// small form under the header, kept for this tab only (sessionStorage), sent
// as a bearer token with every API call.
'use strict';
window.strataKey = (() => {
  const KEY = 'strata.key';
  let form = null;
  function headers(extra) {
    const h = Object.assign({}, extra || {});
    const k = sessionStorage.getItem(KEY);
    if (k) h.Authorization = 'Bearer ' + k;
    return h;
  }
  // shows the form; then() runs once a key is given
  function ask(then) {
    if (!form) {
      form = document.createElement('form');
      form.id = 'keybox';
      const label = document.createElement('label');
      label.append('This server wants an API key (strata serve --api-key): ');
      const input = document.createElement('input');
      input.id = 'key';
      input.type = 'password';
      input.autocomplete = 'off';
      input.required = true;
      label.appendChild(input);
      const button = document.createElement('button');
      button.type = 'submit';
      button.textContent = 'Use it';
      const note = document.createElement('span');
      note.className = 'muted';
      note.textContent = 'kept for this tab only';
      form.append(label, button, note);
      document.querySelector('header').after(form);
    }
    form.hidden = false;
    form.onsubmit = (ev) => {
      ev.preventDefault();
      sessionStorage.setItem(KEY, form.querySelector('input').value);
      form.hidden = true;
      then();
    };
    form.querySelector('input').focus();
  }
  return { headers, ask };
})();
