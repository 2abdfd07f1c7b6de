// The catalog forms' backend sections (tenants.admin.backend_forms): only the chosen backend's section shows, the
// chosen Python function's signature and docstring alone (and its generated input schema, while the schema box holds
// one nobody wrote), whom an HTTP tool acts as with the fields of that kind, the authentication fields its kind needs
// (shown where the tenant acts, or machine clients use them); rows (content blocks, prompt messages and arguments,
// icons) get Add and Remove buttons in place of their "Leave out" boxes, and a content block shows only the inputs of
// its kind (the others are disabled, so they are not sent). Without this script every section and input shows, and
// saving works the same (the schema is generated at save).
(() => {
  "use strict";

  const AUTH_FIELDS = {
    http_auth_secret: ["bearer", "header", "query", "basic", "client_credentials"],
    http_auth_name: ["header", "query"],
    http_auth_client_id: ["client_credentials"],
    http_auth_token_url: ["client_credentials"],
    http_auth_scope: ["client_credentials"],
  };

  // The "Acts as" fields (tenants.admin.acting_auth) each kind of personal config takes.
  const OAUTH = ["user_oauth"];
  const CLIENT = ["user_oauth", "token_exchange"];
  const PERSONAL = ["user_oauth", "user_key", "token_exchange"];
  const ACTING_FIELDS = {
    http_person_issuer: OAUTH,
    http_person_authorization_endpoint: OAUTH,
    http_person_token_endpoint: OAUTH,
    http_person_revocation_endpoint: OAUTH,
    http_person_client: OAUTH,
    http_person_client_id: CLIENT,
    http_person_client_secret: CLIENT,
    http_person_scope: CLIENT,
    http_person_placement: ["user_key"],
    http_person_key_name: ["user_key"],
    http_person_label: ["user_key"],
    http_person_audience: ["token_exchange"],
    http_person_resource: OAUTH,
    http_machine: PERSONAL,
  };

  function rowOf(name) {
    return document.querySelector(`.form-row.field-${name}`) || document.querySelector(`.field-${name}`);
  }

  function showSections(select) {
    for (const section of document.querySelectorAll("fieldset.backend-section")) {
      section.hidden = !section.classList.contains(`backend-section-${select.value}`);
    }
  }

  function showFunction(select) {
    for (const details of document.querySelectorAll("[data-python-function]")) {
      details.hidden = details.dataset.pythonFunction !== select.value;
    }
  }

  // The schema a tool has when nobody wrote one (tenants.backends.python_schema.EMPTY_SCHEMA).
  const EMPTY_SCHEMA = { type: "object" };

  function canonical(value) {
    if (Array.isArray(value)) return value.map(canonical);
    if (value && typeof value === "object") {
      return Object.fromEntries(Object.keys(value).sort().map((key) => [key, canonical(value[key])]));
    }
    return value;
  }

  function sameJson(a, b) {
    return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
  }

  // The input schema made from a granted function's signature, as the page carries it, or null.
  function generatedSchema(name) {
    for (const details of document.querySelectorAll("[data-python-function]")) {
      if (details.dataset.pythonFunction === name && details.dataset.inputSchema) {
        return JSON.parse(details.dataset.inputSchema);
      }
    }
    return null;
  }

  // A tool's input schema follows the chosen function while it is one nobody wrote: {"type": "object"}, or the schema
  // made from the function chosen before. The form's saving applies the same rule without this script.
  function followSchema(select) {
    const box = document.getElementById("id_input_schema");
    if (!box) return;
    let previous = select.value;
    select.addEventListener("change", () => {
      const chosen = generatedSchema(select.value);
      if (!chosen) return;
      const before = generatedSchema(previous);
      previous = select.value;
      const editor = box.schemaEditor; // the schema editor's, once it has enhanced the box
      let current;
      try {
        current = JSON.parse(editor ? editor.getValue() : box.value);
      } catch {
        return; // what was typed is not JSON: someone is writing it
      }
      if (!sameJson(current, EMPTY_SCHEMA) && !(before && sameJson(current, before))) return;
      const text = JSON.stringify(chosen, null, 2);
      if (editor) editor.setValue(text);
      else box.value = text;
    });
  }

  // The shared credentials are used where the tenant acts, or where machine clients may use them.
  function sharedUsed() {
    const acting = document.getElementById("id_http_acts_as");
    const machine = document.getElementById("id_http_machine");
    return !acting || acting.value === "tenant" || (machine && machine.value === "shared");
  }

  function showAuth() {
    const select = document.getElementById("id_http_auth_type");
    if (!select) return;
    const used = sharedUsed();
    const type = rowOf("http_auth_type");
    if (type) type.hidden = !used;
    for (const [name, kinds] of Object.entries(AUTH_FIELDS)) {
      const row = rowOf(name);
      if (row) row.hidden = !used || !kinds.includes(select.value);
    }
  }

  function showActing(select) {
    for (const [name, kinds] of Object.entries(ACTING_FIELDS)) {
      const row = rowOf(name);
      if (row) row.hidden = !kinds.includes(select.value);
    }
    showAuth();
  }

  function follow(id, show) {
    const select = document.getElementById(id);
    if (!select) return;
    show(select);
    select.addEventListener("change", () => show(select));
  }

  // A row's inputs that belong to other kinds than the one its select chose are hidden and disabled.
  function showKind(row) {
    const kind = row.querySelector("select[name$='_kind']");
    if (!kind) return;
    for (const part of row.querySelectorAll("[data-kinds]")) {
      const shown = part.dataset.kinds.split(" ").includes(kind.value);
      part.hidden = !shown;
      for (const field of part.querySelectorAll("input, textarea, select")) field.disabled = !shown;
    }
  }

  function clear(row) {
    for (const field of row.querySelectorAll("input, textarea, select")) {
      if (field.tagName === "SELECT") field.selectedIndex = 0;
      else if (field.type === "checkbox") field.checked = false;
      else field.value = "";
    }
    for (const preview of row.querySelectorAll("[data-block-preview]")) preview.remove();
    showKind(row);
  }

  // Rows are numbered from 1 in their labels and from 0 in their names and ids; all follow the row's place.
  function renumber(container) {
    container.querySelectorAll(":scope > [data-block]").forEach((row, index) => {
      for (const element of row.querySelectorAll("[id], [for], [name]")) {
        for (const attribute of ["id", "for", "name"]) {
          const value = element.getAttribute(attribute);
          if (value) element.setAttribute(attribute, value.replace(/_\d+(?=$|_[A-Za-z]+$)/, `_${index}`));
        }
      }
      for (const element of row.querySelectorAll("label, legend, button")) {
        if (/\d+$/.test(element.textContent)) element.textContent = element.textContent.replace(/\d+$/, `${index + 1}`);
      }
    });
  }

  function enableBlocks(container) {
    const add = container.querySelector(":scope > [data-block-add]");
    const rowsOf = () => container.querySelectorAll(":scope > [data-block]");
    for (const button of container.querySelectorAll("[data-block-remove], [data-block-add]")) button.hidden = false;
    for (const omit of container.querySelectorAll("[data-block-omit]")) omit.remove();
    for (const row of rowsOf()) showKind(row);
    container.addEventListener("change", (event) => {
      if (event.target.matches("select[name$='_kind']")) showKind(event.target.closest("[data-block]"));
    });
    container.addEventListener("click", (event) => {
      const remove = event.target.closest("[data-block-remove]");
      if (remove) {
        const row = remove.closest("[data-block]");
        if (rowsOf().length > 1) row.remove();
        else clear(row);
        renumber(container);
        (container.querySelector("[data-block] :is(textarea, input, select):not([type=hidden])") || add).focus();
        return;
      }
      if (event.target.closest("[data-block-add]")) {
        const rows = rowsOf();
        const copy = rows[rows.length - 1].cloneNode(true);
        clear(copy);
        add.before(copy);
        renumber(container);
        copy.querySelector(":is(textarea, input, select):not([type=hidden])").focus();
      }
    });
  }

  // The tenant box (a select2 autocomplete, made after this script runs) is named after its label for screen
  // readers: select2 labels it by the text it shows, which is empty until a tenant is chosen.
  function nameAutocompletes() {
    for (const box of document.querySelectorAll(".select2-selection[role=combobox]")) {
      const select = box.closest(".select2")?.previousElementSibling;
      const label = select && select.id ? document.querySelector(`label[for="${select.id}"]`) : null;
      if (!label) continue;
      label.id ||= `${select.id}_label`;
      const shown = box.querySelector(".select2-selection__rendered[role=textbox]");
      box.setAttribute("aria-labelledby", shown ? `${label.id} ${shown.id}` : label.id);
      if (shown) shown.setAttribute("aria-labelledby", label.id);
    }
  }

  function start() {
    follow("id_backend", showSections);
    follow("id_python_function", showFunction);
    const functions = document.getElementById("id_python_function");
    if (functions) followSchema(functions);
    follow("id_http_auth_type", showAuth);
    follow("id_http_acts_as", showActing);
    follow("id_http_machine", showAuth);
    for (const container of document.querySelectorAll("[data-blocks]")) enableBlocks(container);
    // After the admin's own ready handlers, which make the autocompletes (jQuery runs them in order, later).
    if (window.django && window.django.jQuery) window.django.jQuery(nameAutocompletes);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
