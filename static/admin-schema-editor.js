// The admin's JSON Schema editor: turns each textarea[data-schema-editor] into a CodeMirror editor with JSON
// highlighting, reports JSON syntax errors with their line and column as you type, asks the admin's schema check
// (the rules saving applies, run on the server) after each pause, and previews the form a client would render
// (SchemaForm). Without script the textarea stays and the server checks on save.
(function () {
  "use strict";

  const CHECK_DELAY_MS = 400;

  // The first JSON syntax error of `text` as {message, offset}, or null. A scanner of its own rather than
  // JSON.parse: browsers word and place JSON.parse's errors differently, and the position is the point.
  function jsonSyntaxProblem(text) {
    let i = 0;
    const fail = (message) => {
      throw { message, offset: i };
    };
    const space = () => {
      while (i < text.length && " \t\n\r".includes(text[i])) i += 1;
    };
    const describe = () => (i >= text.length ? "the end of the text" : `${JSON.stringify(text[i])}`);
    const string = () => {
      i += 1;
      for (;;) {
        const c = text[i];
        if (c === undefined) fail("Unterminated string: a closing \" is missing");
        if (c === '"') {
          i += 1;
          return;
        }
        if (c === "\\") {
          const next = text[i + 1];
          if (next !== undefined && '"\\/bfnrt'.includes(next)) i += 2;
          else if (next === "u" && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) i += 6;
          else fail("Invalid escape in a string");
        } else if (c < " ") {
          fail("A line break or control character inside a string (write it as an escape such as \\n)");
        } else {
          i += 1;
        }
      }
    };
    const NUMBER = /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
    const value = () => {
      space();
      const c = text[i];
      if (c === "{") {
        i += 1;
        space();
        if (text[i] === "}") {
          i += 1;
          return;
        }
        for (;;) {
          space();
          if (text[i] !== '"') fail(`Expected a property name in double quotes, found ${describe()}`);
          string();
          space();
          if (text[i] !== ":") fail(`Expected ':' after the property name, found ${describe()}`);
          i += 1;
          value();
          space();
          if (text[i] === ",") {
            i += 1;
            continue;
          }
          if (text[i] === "}") {
            i += 1;
            return;
          }
          fail(`Expected ',' or '}' after the property value, found ${describe()}`);
        }
      }
      if (c === "[") {
        i += 1;
        space();
        if (text[i] === "]") {
          i += 1;
          return;
        }
        for (;;) {
          value();
          space();
          if (text[i] === ",") {
            i += 1;
            continue;
          }
          if (text[i] === "]") {
            i += 1;
            return;
          }
          fail(`Expected ',' or ']' after the array item, found ${describe()}`);
        }
      }
      if (c === '"') return string();
      if (c === "-" || (c >= "0" && c <= "9")) {
        NUMBER.lastIndex = i;
        const match = NUMBER.exec(text);
        if (!match) fail("Invalid number");
        i += match[0].length;
        return;
      }
      for (const word of ["true", "false", "null"]) {
        if (text.startsWith(word, i)) {
          i += word.length;
          return;
        }
      }
      fail(`Expected a value, found ${describe()}`);
    };
    try {
      value();
      space();
      if (i < text.length) fail(`Unexpected ${describe()} after the JSON value`);
      return null;
    } catch (problem) {
      return problem;
    }
  }

  function lineAndColumn(text, offset) {
    const before = text.slice(0, offset);
    const line = before.split("\n").length;
    return { line, column: offset - (before.lastIndexOf("\n") + 1) + 1 };
  }

  function csrfToken(form) {
    const input = form && form.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function enhance(textarea) {
    const field = textarea.dataset.schemaEditor;
    const label = document.querySelector(`label[for="${textarea.id}"]`);
    const editor = CodeMirror.fromTextArea(textarea, {
      mode: { name: "javascript", json: true },
      lineNumbers: true,
      matchBrackets: true,
      autoCloseBrackets: true,
      indentUnit: 2,
      tabSize: 2,
      // The editor grows with its text and wraps long lines, so it never scrolls inside itself (a scrolling
      // region that keyboard users cannot reach is an accessibility failure).
      viewportMargin: Infinity,
      lineWrapping: true,
      scrollbarStyle: "null",
      screenReaderLabel: label ? label.textContent.replace(/:\s*$/, "") : field,
      // Tab moves on to the next field, as everywhere in the form (no keyboard trap); Ctrl-] and Ctrl-[ indent.
      extraKeys: { Tab: false, "Shift-Tab": false },
    });
    // Other scripts read and replace the text through the textarea (admin-backend-sections.js: a Python tool's
    // generated input schema follows the chosen function).
    textarea.schemaEditor = editor;
    const input = editor.getInputField();
    input.id = `${textarea.id}_editor`;
    if (label) label.htmlFor = input.id;

    const problems = document.createElement("div");
    problems.id = `${textarea.id}_problems`;
    problems.className = "schema-editor-problems";
    problems.setAttribute("aria-live", "polite");
    const keys = document.createElement("p");
    keys.id = `${textarea.id}_keys`;
    keys.className = "schema-editor-keys";
    keys.textContent = "Tab moves to the next field; Ctrl+] and Ctrl+[ indent. Checked as you type.";
    // One block for the editor and what belongs to it: the admin lays a field's parts out side by side.
    const block = document.createElement("div");
    block.className = "schema-editor";
    const wrapper = editor.getWrapperElement();
    wrapper.before(block);
    block.append(wrapper, keys, problems);
    input.setAttribute("aria-describedby", `${keys.id} ${problems.id}`);

    let preview = null;
    let form = null;
    if (textarea.dataset.schemaPreview) {
      preview = document.createElement("section");
      preview.className = "schema-editor-preview";
      preview.setAttribute("aria-labelledby", `${textarea.id}_preview_title`);
      const title = document.createElement("h3");
      title.id = `${textarea.id}_preview_title`;
      title.textContent = "Preview: the form a client renders";
      const body = document.createElement("div");
      body.className = "schema-editor-preview-form";
      const tryIt = document.createElement("button");
      tryIt.type = "button";
      tryIt.className = "button";
      tryIt.textContent = "Check the preview's values";
      const outcome = document.createElement("pre");
      outcome.className = "schema-editor-preview-outcome";
      outcome.setAttribute("aria-live", "polite");
      preview.append(title, body, tryIt, outcome);
      problems.after(preview);
      tryIt.addEventListener("click", () => {
        if (!form) return;
        const messages = form.validate();
        outcome.textContent = messages.length ? messages.join("\n") : `Arguments: ${JSON.stringify(form.value(), null, 2)}`;
      });
      // Enter in a preview field must not submit the admin's form (and save the tool).
      body.addEventListener("keydown", (event) => {
        if (event.key === "Enter" && event.target.tagName === "INPUT") event.preventDefault();
      });
      preview.body = body;
    }

    let marked = null;
    let pending = null;
    let inFlight = null;

    function show(kind, messages) {
      problems.dataset.state = kind;
      problems.replaceChildren();
      if (kind === "ok") {
        problems.textContent = "No problems found.";
        return;
      }
      if (kind === "checking") {
        problems.textContent = "Checking…";
        return;
      }
      const list = document.createElement("ul");
      list.className = "errorlist";
      for (const message of messages) {
        const item = document.createElement("li");
        item.textContent = message;
        list.append(item);
      }
      problems.append(list);
    }

    function renderPreview(schema) {
      if (!preview) return;
      const values = form ? form.value() : undefined;
      form = window.SchemaForm.render(preview.body, schema, { values, idPrefix: `${textarea.id}_preview` });
    }

    async function serverCheck(text) {
      if (inFlight) inFlight.abort();
      inFlight = new AbortController();
      try {
        const response = await fetch(textarea.dataset.schemaCheckUrl, {
          method: "POST",
          headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken(textarea.form) },
          body: JSON.stringify({ field, text }),
          signal: inFlight.signal,
          credentials: "same-origin",
        });
        const answer = await response.json();
        if (editor.getValue() !== text) return; // typed on meanwhile: a newer check follows
        const errors = Array.isArray(answer.errors) ? answer.errors : [];
        show(errors.length ? "schema" : "ok", errors);
      } catch (error) {
        if (error.name !== "AbortError") show("unchecked", ["Could not check the schema now; saving will."]);
      }
    }

    function check() {
      const text = editor.getValue();
      if (marked !== null) {
        editor.removeLineClass(marked, "background", "schema-editor-error-line");
        marked = null;
      }
      clearTimeout(pending);
      const problem = text.trim() === "" ? null : jsonSyntaxProblem(text);
      if (problem) {
        if (inFlight) inFlight.abort();
        const where = lineAndColumn(text, problem.offset);
        marked = editor.addLineClass(where.line - 1, "background", "schema-editor-error-line");
        show("syntax", [`Line ${where.line}, column ${where.column}: ${problem.message}.`]);
        return;
      }
      if (text.trim() !== "") renderPreview(JSON.parse(text));
      // Said only after a syntax error (which no longer holds): announcing it at every key would be noise.
      if (problems.dataset.state === "syntax" || !problems.dataset.state) show("checking", []);
      pending = setTimeout(() => serverCheck(text), CHECK_DELAY_MS);
    }

    editor.on("changes", check);
    check();
  }

  function start() {
    if (!window.CodeMirror) return; // the plain textarea still works
    document.querySelectorAll("textarea[data-schema-editor]").forEach(enhance);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
