// The tool form's backend sections (tenants.admin.backend_forms): only the chosen backend's section shows, the
// chosen Python function's signature and docstring alone (and its generated input schema, while the schema box holds
// one nobody wrote), the authentication fields its kind needs, and text blocks and icons get Add and Remove buttons.
// Without this script every section shows, and saving works the same (the schema is generated at save).
(() => {
  "use strict";

  const AUTH_FIELDS = {
    http_auth_secret: ["bearer", "header", "query", "basic", "client_credentials"],
    http_auth_name: ["header", "query"],
    http_auth_client_id: ["client_credentials"],
    http_auth_token_url: ["client_credentials"],
    http_auth_scope: ["client_credentials"],
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

  function showAuth(select) {
    for (const [name, kinds] of Object.entries(AUTH_FIELDS)) {
      const row = rowOf(name);
      if (row) row.hidden = !kinds.includes(select.value);
    }
  }

  function follow(id, show) {
    const select = document.getElementById(id);
    if (!select) return;
    show(select);
    select.addEventListener("change", () => show(select));
  }

  // Rows are numbered from 1 in their labels and from 0 in their ids; both follow the row's place.
  function renumber(container) {
    container.querySelectorAll(":scope > [data-block]").forEach((row, index) => {
      for (const element of row.querySelectorAll("[id], [for]")) {
        for (const attribute of ["id", "for"]) {
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
    for (const button of container.querySelectorAll("[data-block-remove], [data-block-add]")) button.hidden = false;
    container.addEventListener("click", (event) => {
      const remove = event.target.closest("[data-block-remove]");
      if (remove) {
        const rows = container.querySelectorAll(":scope > [data-block]");
        const row = remove.closest("[data-block]");
        if (rows.length > 1) {
          row.remove();
        } else {
          for (const field of row.querySelectorAll("input, textarea, select")) field.value = "";
        }
        renumber(container);
        (container.querySelector("[data-block] textarea, [data-block] input") || add).focus();
        return;
      }
      if (event.target.closest("[data-block-add]")) {
        const rows = container.querySelectorAll(":scope > [data-block]");
        const copy = rows[rows.length - 1].cloneNode(true);
        for (const field of copy.querySelectorAll("input, textarea, select")) field.value = "";
        add.before(copy);
        renumber(container);
        copy.querySelector("input, textarea").focus();
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
    for (const container of document.querySelectorAll("[data-blocks]")) enableBlocks(container);
    // After the admin's own ready handlers, which make the autocompletes (jQuery runs them in order, later).
    if (window.django && window.django.jQuery) window.django.jQuery(nameAutocompletes);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
