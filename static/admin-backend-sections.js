// The tool form's backend sections (tenants.admin.backend_forms): only the chosen backend's section shows, the
// chosen Python function's signature and docstring alone, the authentication fields its kind needs, and text
// blocks and icons get Add and Remove buttons. Without this script every section shows and saving works the same.
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
    follow("id_http_auth_type", showAuth);
    for (const container of document.querySelectorAll("[data-blocks]")) enableBlocks(container);
    // After the admin's own ready handlers, which make the autocompletes (jQuery runs them in order, later).
    if (window.django && window.django.jQuery) window.django.jQuery(nameAutocompletes);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
